// matplotlib in the Pyodide sandbox, where its wheels are in the package directory: plt.show() under Agg gives one
// image/png rich result per figure. Real matplotlib wheels cannot be fetched on CI's machine (no registry it reaches
// carries them), so without them this test is skipped (exit 77, CTest's SKIP_RETURN_CODE), saying why.
#include <iostream>
#include <string>

#include "code_interpreter/code_interpreter.hpp"
#include "code_interpreter/pyodide_packages.hpp"

namespace ci = code_interpreter;

int main() {
  ci::PackageFetchOptions where;
  where.runtime_dir = CI_TEST_RUNTIME_DIR;
  for (const auto& p : ci::list_pyodide_packages({"matplotlib"}, where)) {
    if (p.state != ci::PackageStatus::State::kPresent) {
      std::cout << "skipped: " << p.file_name << " (" << p.name << ", needed by matplotlib) is not in the package "
                << "directory; fetch it with `code-interpreter packages fetch matplotlib` on a machine with internet\n";
      return 77;
    }
  }
  ci::PyodideOptions options;
  options.runtime_dir = CI_TEST_RUNTIME_DIR;
  options.additional_packages = {"matplotlib"};
  auto sandbox = ci::PyodideSandbox::create(options);
  const auto r = sandbox->execute_code(
      "import matplotlib.pyplot as plt\n"
      "plt.plot([1, 2, 3], [1, 4, 9])\n"
      "plt.show()\n"
      "'done'");
  int failures = 0;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) {
      std::cout << "FAILED: " << what << "\n";
      ++failures;
    }
  };
  check(r.status == ci::ExecutionStatus::kSuccess, "status is SUCCESS (" + r.text() + ")");
  check(r.results.size() == 2, "two results: the figure, then 'done'");
  if (r.results.size() == 2) {
    const auto png = ci::rich_data_bytes(r.results[0], "image/png");
    check(png && png->rfind("\x89PNG\r\n\x1a\n", 0) == 0, "the figure is a PNG");
    check(r.results[0].data.at("text/plain") == "<Figure size 640x480 with 1 Axes>", "the figure's text");
    check(r.results[1].data.at("text/plain") == "'done'" && r.results[1].is_main_result, "the main result");
  }
  std::cout << (failures == 0 ? "passed\n" : "failed\n");
  return failures == 0 ? 0 : 1;
}
