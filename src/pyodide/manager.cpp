#include "pyodide/manager.hpp"

#include "core/manager.hpp"

namespace code_interpreter::pyodide {
namespace {

class PyodideManager final : public SandboxManager {
 public:
  std::string_view backend() const noexcept override { return "pyodide"; }
  ManagerCapabilities capabilities() const noexcept override { return {}; }

 protected:
  // Unreachable: the non-virtual functions refuse every verb capabilities() does not declare.
  SandboxPage do_list_page(const SandboxFilter&, std::size_t, const std::optional<std::string>&) override { refuse(); }
  std::optional<SandboxInfo> do_get(std::string_view) override { refuse(); }
  bool do_kill(std::string_view) override { refuse(); }
  bool do_pause(std::string_view) override { refuse(); }
  void do_resume(std::string_view, std::chrono::seconds) override { refuse(); }

 private:
  [[noreturn]] static void refuse() { detail::management_error(ErrorKind::kUnsupported, "the pyodide backend has no sandbox management"); }
};

}  // namespace

std::unique_ptr<SandboxManager> make_manager() { return std::make_unique<PyodideManager>(); }

}  // namespace code_interpreter::pyodide
