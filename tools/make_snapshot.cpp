// Makes the Pyodide runtime's base snapshot image at build time: `<runtime dir>/snapshot-<key>.bin`, in the format
// and under the key the library uses at run time (src/pyodide/snapshot.hpp), so that PyodideSandbox::create()
// restores it when no snapshot_dir is given (docs/backends/pyodide.md "Snapshots"). The image is made the way the
// library makes any image: by PyodideSandbox::create() itself, in a throwaway runtime that runs no other code. Then,
// whether it was made now or found, a sandbox restores it and must answer `1+1` with `2`; an image that checks but
// does not restore is removed by that create and made again. Images of other keys (older runtime builds) and
// temporary files left by an interrupted run are removed from the directory, so an install carries only the
// current image.
//
// Usage: make_snapshot RUNTIME_DIR. Exit status 0 when the directory holds the checked image, 1 otherwise (the
// reason on stderr).
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "code_interpreter/code_interpreter.hpp"
#include "pyodide/runtime.hpp"
#include "pyodide/snapshot.hpp"

namespace ci = code_interpreter;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_snapshot RUNTIME_DIR\n");
    return 2;
  }
  try {
    const auto runtime = ci::detail::check_runtime(argv[1]);
    const auto image = ci::detail::snapshot_path(runtime.dir, ci::detail::snapshot_key(runtime));
    for (const auto& entry : fs::directory_iterator(runtime.dir)) {
      const auto name = entry.path().filename().string();
      const bool stale = name.rfind("snapshot-", 0) == 0 &&
                         (entry.path().extension() == ".bin" || name.find(".bin.part-") != std::string::npos);
      if (entry.path() != image && stale) fs::remove(entry.path());
    }
    // Made, if it is missing or does not check, by create() into the runtime directory (this sandbox's
    // snapshot_dir), and restored by it. A restore that fails removes the image and loads cold: the second
    // round makes it again.
    ci::PyodideOptions options;
    options.runtime_dir = runtime.dir;
    options.snapshot_dir = runtime.dir;
    for (int round = 0; round < 2; ++round) {
      if (round == 1 && ci::detail::snapshot_valid(image)) break;
      auto sandbox = ci::PyodideSandbox::create(options);
      const auto result = sandbox->execute_code("1+1");
      const bool two = result.status == ci::ExecutionStatus::kSuccess && result.results.size() == 1 &&
                       result.results[0].data.count("text/plain") == 1 &&
                       result.results[0].data.at("text/plain") == "2";
      if (!two) {
        std::fprintf(stderr, "make_snapshot: a runtime of %s did not answer 1+1 = 2: %s\n", runtime.dir.c_str(),
                     result.error.c_str());
        return 1;
      }
    }
    if (!ci::detail::snapshot_valid(image)) {
      std::fprintf(stderr, "make_snapshot: no image was made in %s (see the warning above)\n",
                   runtime.dir.c_str());
      return 1;
    }
    std::printf("make_snapshot: %s\n", image.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_snapshot: %s\n", e.what());
    return 1;
  }
}
