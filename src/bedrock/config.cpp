#include "bedrock/config.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include <curl/curl.h>

#include "core/defaults.hpp"

namespace code_interpreter::bedrock {
namespace {

std::optional<std::string> from_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::string trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return std::string(text);
}

std::optional<IniFile> read_ini(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return parse_ini(text.str());
}

std::string home_file(const char* env_name, const char* relative) {
  if (auto path = from_env(env_name)) return *path;
  const auto home = from_env("HOME");
  return home ? *home + "/" + relative : std::string();
}

const std::map<std::string, std::string>* section(const std::optional<IniFile>& file, const std::string& name) {
  if (!file) return nullptr;
  const auto it = file->find(name);
  return it == file->end() ? nullptr : &it->second;
}

std::optional<std::string> value(const std::map<std::string, std::string>* s, const char* key) {
  if (s == nullptr) return std::nullopt;
  const auto it = s->find(key);
  if (it == s->end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::optional<AwsCredentials> credentials_in(const std::map<std::string, std::string>* s) {
  auto id = value(s, "aws_access_key_id");
  auto secret = value(s, "aws_secret_access_key");
  if (!id || !secret) return std::nullopt;
  return AwsCredentials{*id, *secret, value(s, "aws_session_token").value_or("")};
}

bool printable_without_breaks(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](unsigned char c) { return c >= 0x20 && c != 0x7f; });
}

[[noreturn]] void refuse(const std::string& message, ErrorKind kind) {
  throw SandboxStartError(message, Stage::kConfigure, kind);
}

}  // namespace

IniFile parse_ini(std::string_view text) {
  IniFile file;
  std::string current;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = text.find('\n', start);
    std::string line = trim(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    start = end == std::string_view::npos ? text.size() + 1 : end + 1;
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      current = trim(std::string_view(line).substr(1, line.size() - 2));
      file[current];
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string::npos || current.empty()) continue;
    std::string key = trim(std::string_view(line).substr(0, eq));
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
    file[current][key] = trim(std::string_view(line).substr(eq + 1));
  }
  return file;
}

ResolvedConfig resolve_config(const BedrockOptions& options) {
  ResolvedConfig config;
  const std::string profile = options.profile ? *options.profile : from_env("AWS_PROFILE").value_or("default");
  const auto credentials_file = read_ini(home_file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials"));
  const auto config_file = read_ini(home_file("AWS_CONFIG_FILE", ".aws/config"));
  // The config file names profiles "[profile x]", except "[default]".
  const auto* config_section = section(config_file, profile == "default" ? "default" : "profile " + profile);

  // Credentials: options, environment, credentials file, config file. As in the AWS CLI and SDKs, a profile named
  // explicitly (the option, like `--profile`; not AWS_PROFILE) skips the environment's keys: the caller asked for
  // that profile's credentials.
  const bool explicit_profile = options.profile.has_value();
  if (options.credentials) {
    config.credentials = *options.credentials;
    config.credentials_source = "options";
  } else if (auto id = from_env("AWS_ACCESS_KEY_ID"), secret = from_env("AWS_SECRET_ACCESS_KEY");
             !explicit_profile && id && secret) {
    config.credentials = {*id, *secret, from_env("AWS_SESSION_TOKEN").value_or("")};
    config.credentials_source = "environment";
  } else if (auto c = credentials_in(section(credentials_file, profile))) {
    config.credentials = *c;
    config.credentials_source = "credentials file";
  } else if (auto c2 = credentials_in(config_section)) {
    config.credentials = *c2;
    config.credentials_source = "config file";
  } else {
    refuse("no AWS credentials: set BedrockOptions::credentials, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
           "profile '" + profile + "' in the shared credentials file",
           ErrorKind::kUnauthenticated);
  }
  const auto& c = config.credentials;
  if (c.access_key_id.empty() || c.secret_access_key.empty())
    refuse("the AWS credentials are incomplete (access key id and secret are both required)", ErrorKind::kUnauthenticated);
  // libcurl takes "id:secret" as one string, split at the first ':'; header values cannot hold line breaks.
  if (c.access_key_id.find(':') != std::string::npos || !printable_without_breaks(c.access_key_id))
    refuse("the AWS access key id contains ':' or a control character", ErrorKind::kInvalidArgument);
  if (!printable_without_breaks(c.secret_access_key) || !printable_without_breaks(c.session_token))
    refuse("the AWS secret or session token contains a control character", ErrorKind::kInvalidArgument);

  // Region: options, AWS_REGION, AWS_DEFAULT_REGION, the profile's config.
  if (options.region) config.region = *options.region;
  else if (auto r = from_env("AWS_REGION")) config.region = *r;
  else if (auto r2 = from_env("AWS_DEFAULT_REGION")) config.region = *r2;
  else if (auto r3 = value(config_section, "region")) config.region = *r3;
  if (config.region.empty())
    refuse("no AWS region: set BedrockOptions::region, AWS_REGION or AWS_DEFAULT_REGION", ErrorKind::kInvalidArgument);
  // The region goes into the host name and the signing scope.
  if (!std::all_of(config.region.begin(), config.region.end(),
                   [](unsigned char ch) { return std::islower(ch) || std::isdigit(ch) || ch == '-'; }))
    refuse("not an AWS region: '" + config.region.substr(0, 64) + "'", ErrorKind::kInvalidArgument);

  // Endpoint: options, the service's own variable, the general one, the standard host (docs/protocols/bedrock.md "Endpoints and SigV4 signing").
  if (options.endpoint_url) config.endpoint = *options.endpoint_url;
  else if (auto e = from_env("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE")) config.endpoint = *e;
  else if (auto e2 = from_env("AWS_ENDPOINT_URL")) config.endpoint = *e2;
  else
    config.endpoint = "https://bedrock-agentcore." + config.region +
                      (config.region.rfind("cn-", 0) == 0 ? ".amazonaws.com.cn" : ".amazonaws.com");
  while (!config.endpoint.empty() && config.endpoint.back() == '/') config.endpoint.pop_back();
  if (config.endpoint.rfind("http://", 0) != 0 && config.endpoint.rfind("https://", 0) != 0)
    // Not quoted: an endpoint may carry a user name and password, refused below only once it is a URL.
    refuse("the Bedrock endpoint must start with http:// or https://", ErrorKind::kInvalidArgument);
  if (!printable_without_breaks(config.endpoint) || config.endpoint.find(' ') != std::string::npos)
    refuse("the Bedrock endpoint contains a space or a control character", ErrorKind::kInvalidArgument);
  if (options.request_timeout.count() <= 0 || options.request_timeout > detail::kMaxRequestBudget)
    refuse("request_timeout must be above 0 and at most 24 hours", ErrorKind::kInvalidArgument);
  // A cap of 0 would make every message hostile, so every call UNKNOWN.
  if (options.max_message_bytes == 0 || options.max_output_bytes == 0)
    refuse("max_message_bytes and max_output_bytes must be positive", ErrorKind::kInvalidArgument);
  if (options.max_download_bytes == 0) refuse("max_download_bytes must be positive", ErrorKind::kInvalidArgument);
  // Request paths are appended to the endpoint: after a query or a fragment they would not be the path.
  if (config.endpoint.find_first_of("?#") != std::string::npos)
    refuse("the Bedrock endpoint must not contain a query or a fragment ('?' or '#')", ErrorKind::kInvalidArgument);
  // What libcurl could not parse (no host, a port over 65535, an open '[') would otherwise fail every request as
  // URL_MALFORMAT, after the retries; a user name or password in it would also be quoted in messages.
  const std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> url(curl_url(), &curl_url_cleanup);
  char* host = nullptr;
  const bool parsed = url && curl_url_set(url.get(), CURLUPART_URL, config.endpoint.c_str(), 0) == CURLUE_OK &&
                      curl_url_get(url.get(), CURLUPART_HOST, &host, 0) == CURLUE_OK && host != nullptr && *host != '\0';
  curl_free(host);
  if (!parsed) refuse("the Bedrock endpoint is not a URL with a host (and a port of at most 65535)", ErrorKind::kInvalidArgument);
  char* user = nullptr;
  const bool has_user = curl_url_get(url.get(), CURLUPART_USER, &user, 0) == CURLUE_OK && user != nullptr;
  curl_free(user);
  if (has_user) refuse("the Bedrock endpoint must not contain a user name or password", ErrorKind::kInvalidArgument);
  return config;
}

}  // namespace code_interpreter::bedrock
