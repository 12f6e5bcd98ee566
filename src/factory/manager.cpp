// create_manager: the SandboxManager of the backend a SandboxConfig names, built from that backend's own options.
#include <algorithm>

#include "bedrock/manager.hpp"
#include "code_interpreter/management.hpp"
#include "e2b/manager.hpp"
#include "factory/settings.hpp"
#include "pyodide/manager.hpp"

namespace code_interpreter {

std::unique_ptr<SandboxManager> create_manager(const SandboxConfig& config) {
  const std::string_view b = config.backend;
  if (std::find(std::begin(kBackendNames), std::end(kBackendNames), b) == std::end(kBackendNames))
    detail::configuration_error(ErrorKind::kInvalidArgument, "unknown backend in 'backend' (known: pyodide, e2b, bedrock)");
  if (b == "pyodide") return pyodide::make_manager();
  if (b == "e2b") return e2b::make_manager(config.e2b);
  return bedrock::make_manager(config.bedrock);
}

}  // namespace code_interpreter
