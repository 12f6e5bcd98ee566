// available_backends: what each backend needs, found without a network call and without keeping a secret.
#include <cstdlib>

#include "bedrock/config.hpp"
#include "code_interpreter/errors.hpp"
#include "code_interpreter/factory.hpp"
#include "pyodide/runtime.hpp"

namespace code_interpreter {
namespace {

bool set_in_environment(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

BackendStatus pyodide_status(const std::optional<std::filesystem::path>& runtime_dir) {
  BackendStatus s{"pyodide", false, {}, {}};
  const auto dir = runtime_dir.value_or(detail::default_runtime_dir());
  try {
    (void)detail::check_runtime(dir);
    s.available = true;
  } catch (const std::exception& e) {
    s.missing.push_back(dir.string());
    s.how = std::string(e.what()) +
            "; the runtime is built and installed with the library (cmake --build, cmake --install), or name its "
            "directory with PyodideOptions::runtime_dir";
  }
  return s;
}

BackendStatus e2b_status() {
  BackendStatus s{"e2b", set_in_environment("E2B_API_KEY"), {}, {}};
  if (!s.available) {
    s.missing.push_back("E2B_API_KEY");
    s.how = "set E2B_API_KEY to an API key of your E2B team (or pass E2BOptions::api_key)";
  }
  return s;
}

BackendStatus bedrock_status() {
  BackendStatus s{"bedrock", false, {}, {}};
  try {
    // Reads the environment and the AWS files as a create would; the credentials it finds stay in this scope.
    (void)bedrock::resolve_config(BedrockOptions{});
    s.available = true;
  } catch (const SandboxStartError& e) {
    const std::string_view said = e.what();
    if (e.kind() == ErrorKind::kUnauthenticated && said.find("no AWS credentials") != std::string_view::npos)
      s.missing = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"};
    else if (said.find("no AWS region") != std::string_view::npos)
      s.missing = {"AWS_REGION"};
    // else: present but malformed; `how` says which
    // Its messages name variables and files, never a value (bedrock/config.hpp).
    s.how = e.what();
  }
  return s;
}

}  // namespace

std::vector<BackendStatus> available_backends(const std::optional<std::filesystem::path>& pyodide_runtime_dir) {
  return {pyodide_status(pyodide_runtime_dir), e2b_status(), bedrock_status()};
}

}  // namespace code_interpreter
