// sandbox_config_from_json: the configuration document (its shape is in factory.hpp) read strictly, every key
// checked, so that a typo or a setting the backend cannot honour fails at once instead of being ignored.
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "code_interpreter/management.hpp"
#include "core/network_policy.hpp"
#include "factory/settings.hpp"

namespace code_interpreter {
namespace {

using nlohmann::json;
using detail::configuration_error;

constexpr int kMaxDepth = 16;  // the document is two levels deep; anything deeper is refused by its keys anyway
// The longest duration a key takes: far beyond any sensible budget, and far from what a clock can overflow at.
constexpr std::int64_t kMaxMilliseconds = std::int64_t{30} * 24 * 3600 * 1000;

// A key as an error message shows it: printable ASCII kept, anything else '?', at most 64 characters, so that a
// key cannot break a log line or carry much of a misplaced value.
std::string shown(std::string_view key) {
  std::string out;
  for (const char c : key.substr(0, 64)) out += c >= 0x20 && c < 0x7f && c != '\'' ? c : '?';
  if (key.size() > 64) out += "...";
  return out;
}

// Parses `text`, refusing a key that appears twice in one object (nlohmann keeps the last one silently).
json parse_strict(std::string_view text) {
  struct Duplicate {
    std::string key;
  };
  struct TooDeep {};
  std::vector<std::set<std::string>> open;  // the keys of each object being read; arrays get an empty set
  std::vector<std::string> last_key;        // the key under which each open object or array stands
  std::string pending_key;
  const json::parser_callback_t check = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (open.size() >= kMaxDepth) throw TooDeep{};
        open.emplace_back();
        last_key.push_back(pending_key);
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        open.pop_back();
        last_key.pop_back();
        break;
      case json::parse_event_t::key: {
        pending_key = parsed.get<std::string>();
        if (!open.back().insert(pending_key).second) {
          std::string where;  // the path of keys down to it
          for (std::size_t i = 1; i < last_key.size(); ++i) where += last_key[i] + ".";
          throw Duplicate{where + pending_key};
        }
        break;
      }
      case json::parse_event_t::value:
        break;
    }
    return true;
  };
  try {
    return json::parse(text, check, /*allow_exceptions=*/true);
  } catch (const Duplicate& d) {
    configuration_error(ErrorKind::kInvalidArgument, "the key '" + shown(d.key) + "' appears twice");
  } catch (const TooDeep&) {
    configuration_error(ErrorKind::kInvalidArgument, "the document nests deeper than " + std::to_string(kMaxDepth));
  } catch (const json::parse_error& e) {
    // The parser's own message quotes the text it read, which may hold a value: only the position is said.
    configuration_error(ErrorKind::kInvalidArgument, "not JSON (at byte " + std::to_string(e.byte) + ")");
  } catch (const json::exception&) {
    // A number beyond what a double holds (1e400): the parser's message quotes it.
    configuration_error(ErrorKind::kInvalidArgument, "a number is out of range");
  }
}

[[noreturn]] void wrong_type(const std::string& key, std::string_view what) {
  configuration_error(ErrorKind::kInvalidArgument, "'" + shown(key) + "' must be " + std::string(what));
}

std::string text_of(const json& v, const std::string& key) {
  if (!v.is_string()) wrong_type(key, "a string");
  return v.get<std::string>();
}
bool bool_of(const json& v, const std::string& key) {
  if (!v.is_boolean()) wrong_type(key, "true or false");
  return v.get<bool>();
}
std::uint64_t count_of(const json& v, const std::string& key) {
  if (!v.is_number_unsigned()) wrong_type(key, "a whole number from 0 to 18446744073709551615");
  return v.get<std::uint64_t>();
}
std::size_t size_of(const json& v, const std::string& key) {
  const auto n = count_of(v, key);
  if (n > std::numeric_limits<std::size_t>::max()) wrong_type(key, "a smaller whole number");
  return static_cast<std::size_t>(n);
}
std::chrono::milliseconds ms_of(const json& v, const std::string& key) {
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() == 0 ||
      v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxMilliseconds))
    wrong_type(key, "a whole number of milliseconds from 1 to 2592000000 (30 days)");
  return std::chrono::milliseconds(static_cast<std::int64_t>(v.get<std::uint64_t>()));
}
std::map<std::string, std::string> map_of(const json& v, const std::string& key) {
  if (!v.is_object()) wrong_type(key, "an object of strings");
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : v.items()) out[name] = text_of(value, key + "." + name);
  return out;
}
std::vector<std::string> list_of(const json& v, const std::string& key) {
  if (!v.is_array()) wrong_type(key, "an array of strings");
  std::vector<std::string> out;
  for (const auto& item : v) out.push_back(text_of(item, key + "[]"));
  return out;
}
Language language_of(const json& v) {
  const std::string name = text_of(v, "language");
  for (Language l : {Language::kPython, Language::kJavaScript, Language::kTypeScript, Language::kBash, Language::kR,
                     Language::kJava})
    if (to_string(l) == name) return l;
  configuration_error(ErrorKind::kInvalidArgument,
                      "unknown language in 'language' (known: python, javascript, typescript, bash, r, java)");
}

// "none", "all" or {"allow": [hosts]}: each host checked here, so the refusal names the document's key and index.
NetworkPolicy network_of(const json& v) {
  constexpr std::string_view kShape = "\"none\", \"all\" or {\"allow\": [host, ...]}";
  if (v.is_string()) {
    if (v == "none") return NetworkPolicy::none();
    if (v == "all") return NetworkPolicy::all();
    wrong_type("network", kShape);
  }
  if (!v.is_object() || v.size() != 1 || !v.contains("allow")) wrong_type("network", kShape);
  const auto hosts = list_of(v.at("allow"), "network.allow");
  if (hosts.empty() || hosts.size() > 100) wrong_type("network.allow", "an array of 1..100 hosts");
  for (std::size_t i = 0; i < hosts.size(); ++i)
    if (!detail::valid_allowed_host(hosts[i]))
      configuration_error(ErrorKind::kInvalidArgument, "'network.allow[" + std::to_string(i) +
                                                           "]' is not a host name, an IPv4 address or a CIDR range");
  return NetworkPolicy::allowlist(hosts);
}

[[noreturn]] void unknown_key(const std::string& key) {
  configuration_error(ErrorKind::kInvalidArgument, "unknown key '" + shown(key) + "'");
}

void read_pyodide(const json& section, PyodideOptions& o) {
  if (!section.is_object()) wrong_type("pyodide", "an object");
  for (const auto& [k, v] : section.items()) {
    const std::string key = "pyodide." + k;
    if (k == "runtime_dir") o.runtime_dir = text_of(v, key);
    else if (k == "wheel_dir") o.wheel_dir = text_of(v, key);
    else if (k == "snapshot_dir") o.snapshot_dir = text_of(v, key);
    else if (k == "use_snapshot") o.use_snapshot = bool_of(v, key);
    else if (k == "interrupt_grace_ms") o.interrupt_grace = ms_of(v, key);
    else if (k == "max_output_bytes") o.max_output_bytes = size_of(v, key);
    else if (k == "max_frame_bytes") o.max_frame_bytes = size_of(v, key);
    else if (k == "max_download_bytes") o.max_download_bytes = count_of(v, key);
    else if (k == "memory_limit_bytes") o.memory_limit_bytes = size_of(v, key);
    else if (k == "require_kernel_confinement") o.require_kernel_confinement = bool_of(v, key);
    else unknown_key(key);
  }
}

void read_e2b(const json& section, E2BOptions& o) {
  if (!section.is_object()) wrong_type("e2b", "an object");
  for (const auto& [k, v] : section.items()) {
    const std::string key = "e2b." + k;
    if (k == "domain") o.domain = text_of(v, key);
    else if (k == "api_url") o.api_url = text_of(v, key);
    else if (k == "sandbox_url") o.sandbox_url = text_of(v, key);
    else if (k == "template") o.template_id = text_of(v, key);
    else if (k == "request_timeout_ms") o.request_timeout = ms_of(v, key);
    else if (k == "max_output_bytes") o.max_output_bytes = size_of(v, key);
    else if (k == "max_line_bytes") o.max_line_bytes = size_of(v, key);
    else if (k == "max_download_bytes") o.max_download_bytes = count_of(v, key);
    else if (k == "process_keepalive_seconds") {
      // The range E2BOptions accepts (checked again when the sandbox is made): the interval envd is asked to ping at.
      if (!v.is_number_unsigned() || v.get<std::uint64_t>() < 1 || v.get<std::uint64_t>() > 3600)
        wrong_type(key, "a whole number of seconds from 1 to 3600 (1 hour)");
      o.process_keepalive = std::chrono::seconds(v.get<std::uint64_t>());
    } else if (k == "api_key")  // a secret belongs in E2B_API_KEY, not in a file that is copied and shown around
      configuration_error(ErrorKind::kInvalidArgument, "'e2b.api_key' is not read from a configuration: set E2B_API_KEY");
    else unknown_key(key);
  }
}

void read_bedrock(const json& section, BedrockOptions& o) {
  if (!section.is_object()) wrong_type("bedrock", "an object");
  for (const auto& [k, v] : section.items()) {
    const std::string key = "bedrock." + k;
    if (k == "region") o.region = text_of(v, key);
    else if (k == "endpoint_url") o.endpoint_url = text_of(v, key);
    else if (k == "profile") o.profile = text_of(v, key);
    else if (k == "code_interpreter_identifier") o.code_interpreter_identifier = text_of(v, key);
    else if (k == "interpreter_network_mode") {
      o.interpreter_network_mode = text_of(v, key);
      if (o.interpreter_network_mode != "SANDBOX" && o.interpreter_network_mode != "PUBLIC" &&
          o.interpreter_network_mode != "VPC")
        wrong_type(key, "\"SANDBOX\", \"PUBLIC\" or \"VPC\"");
    }
    else if (k == "request_timeout_ms") o.request_timeout = ms_of(v, key);
    else if (k == "max_output_bytes") o.max_output_bytes = size_of(v, key);
    else if (k == "max_message_bytes") o.max_message_bytes = size_of(v, key);
    else if (k == "max_download_bytes") o.max_download_bytes = count_of(v, key);
    else if (k == "credentials" || k == "access_key_id" || k == "secret_access_key" || k == "session_token")
      configuration_error(ErrorKind::kInvalidArgument, "'" + key + "' is not read from a configuration: AWS "
                                                       "credentials come from the environment or the AWS files");
    else unknown_key(key);
  }
}

}  // namespace

SandboxConfig sandbox_config_from_json(std::string_view json_text) {
  const json doc = parse_strict(json_text);
  if (!doc.is_object()) configuration_error(ErrorKind::kInvalidArgument, "the document must be a JSON object");
  SandboxConfig c;
  if (const auto it = doc.find("backend"); it != doc.end()) c.backend = text_of(*it, "backend");
  for (const auto& [k, v] : doc.items()) {
    if (k == "backend") continue;
    if (k == "language") c.language = language_of(v);
    else if (k == "packages") c.packages = list_of(v, k);
    else if (k == "lifetime_seconds") {
      if (!v.is_number_unsigned() || v.get<std::uint64_t>() == 0 ||
          v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()))
        wrong_type(k, "a whole number of seconds above 0");
      c.lifetime = std::chrono::seconds(v.get<std::uint64_t>());
    } else if (k == "env") c.env = map_of(v, k);
    else if (k == "metadata") c.metadata = map_of(v, k);
    else if (k == "name") c.name = text_of(v, k);
    else if (k == "tag") {
      c.tag = text_of(v, k);
      if (!is_valid_sandbox_tag(*c.tag)) wrong_type(k, "1..32 characters of A-Z, a-z, 0-9 and _");
    } else if (k == "network") c.network_policy = network_of(v);
    else if (k == "create_timeout_ms") c.create_timeout = ms_of(v, k);
    else if (k == "pyodide" || k == "e2b" || k == "bedrock") {
      if (k != c.backend) {
        detail::check_settings(c, /*json_keys=*/true);  // an unknown backend is named first
        configuration_error(ErrorKind::kUnsupported,
                            "the key '" + k + "' configures the backend " + k + ", not " + c.backend);
      }
      if (k == "pyodide") read_pyodide(v, c.pyodide);
      else if (k == "e2b") read_e2b(v, c.e2b);
      else read_bedrock(v, c.bedrock);
    } else {
      unknown_key(k);
    }
  }
  detail::check_settings(c, /*json_keys=*/true);
  return c;
}

}  // namespace code_interpreter
