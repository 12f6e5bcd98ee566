// create_sandbox and the table of the common settings each backend honours.
#include <algorithm>
#include <string>

#include "code_interpreter/errors.hpp"
#include "core/declared_capabilities.hpp"
#include "factory/settings.hpp"

namespace code_interpreter {
namespace detail {
namespace {

struct Setting {
  std::string_view field;
  std::string_view json_key;
  bool pyodide, e2b, bedrock;  // honoured by
  bool (*is_set)(const SandboxConfig&);
};

constexpr Setting kSettings[] = {
    {"lifetime", "lifetime_seconds", false, true, true, [](const SandboxConfig& c) { return c.lifetime.has_value(); }},
    {"env", "env", false, true, false, [](const SandboxConfig& c) { return !c.env.empty(); }},
    {"metadata", "metadata", false, true, false, [](const SandboxConfig& c) { return !c.metadata.empty(); }},
    {"name", "name", false, false, true, [](const SandboxConfig& c) { return c.name.has_value(); }},
    // Pyodide's sandboxes are child processes that end with their parent: nothing to sweep, so nothing to tag.
    {"tag", "tag", false, true, true, [](const SandboxConfig& c) { return c.tag.has_value(); }},
    // Every backend takes a policy; each one's create refuses what it cannot honour (docs/backends.md "Network
    // policy"), with the reason, which this table could not give.
    {"network_policy", "network", true, true, true, [](const SandboxConfig& c) { return c.network_policy.has_value(); }},
};

bool runs(std::string_view backend, Language language) {
  if (backend == "pyodide") return language == Language::kPython;
  if (backend == "bedrock")
    return language == Language::kPython || language == Language::kJavaScript || language == Language::kTypeScript;
  return true;  // E2B's code interpreter runs every Language
}

}  // namespace

void configuration_error(ErrorKind kind, const std::string& message) {
  throw SandboxStartError("configuration: " + message, Stage::kConfigure, kind);
}

void check_settings(const SandboxConfig& config, bool json_keys) {
  const std::string_view b = config.backend;
  if (std::find(std::begin(kBackendNames), std::end(kBackendNames), b) == std::end(kBackendNames)) {
    // Not said back: whatever was put there by mistake (a key, say) stays out of logs.
    configuration_error(ErrorKind::kInvalidArgument, "unknown backend in 'backend' (known: pyodide, e2b, bedrock)");
  }
  for (const auto& s : kSettings) {
    const bool honoured = b == "pyodide" ? s.pyodide : b == "e2b" ? s.e2b : s.bedrock;
    if (!honoured && s.is_set(config)) {
      configuration_error(ErrorKind::kUnsupported, "the backend " + config.backend + " cannot honour '" +
                                                       std::string(json_keys ? s.json_key : s.field) + "'");
    }
  }
  if (!runs(b, config.language)) {
    configuration_error(ErrorKind::kUnsupported, "the backend " + config.backend + " does not run " +
                                                     std::string(to_string(config.language)) + " code ('language')");
  }
}

}  // namespace detail

namespace {

// The settings every backend's options have under the same names.
template <class Options>
Options with_common(Options o, const SandboxConfig& config) {
  o.language = config.language;
  o.additional_packages = config.packages;
  o.create_timeout = config.create_timeout;
  o.cancel = config.cancel;
  if (config.network_policy) o.network_policy = config.network_policy;
  return o;
}

}  // namespace

Capabilities declared_capabilities(const SandboxConfig& config) {
  detail::check_settings(config, /*json_keys=*/false);
  if (config.backend == "pyodide") return detail::pyodide_capabilities(with_common(config.pyodide, config));
  if (config.backend == "e2b") return detail::e2b_capabilities(with_common(config.e2b, config));
  return detail::bedrock_capabilities(with_common(config.bedrock, config));
}

std::unique_ptr<CodeInterpreterSandbox> create_sandbox(const SandboxConfig& config) {
  detail::check_settings(config, /*json_keys=*/false);
  if (config.backend == "pyodide") {
    return PyodideSandbox::create(with_common(config.pyodide, config));
  }
  if (config.backend == "e2b") {
    E2BOptions o = with_common(config.e2b, config);
    if (config.lifetime) o.lifetime = *config.lifetime;
    if (!config.env.empty()) o.env_vars = config.env;
    if (!config.metadata.empty()) o.metadata = config.metadata;
    if (config.tag) o.tag = config.tag;
    return E2BSandbox::create(std::move(o));
  }
  BedrockOptions o = with_common(config.bedrock, config);
  if (config.lifetime) o.session_timeout = *config.lifetime;
  if (config.name) o.session_name = *config.name;
  if (config.tag) o.tag = config.tag;
  return BedrockAgentCoreSandbox::create(std::move(o));
}

}  // namespace code_interpreter
