// Where a Bedrock sandbox gets its region, endpoint and credentials (src/bedrock/config.cpp): the AWS INI parser,
// the precedence options > environment > shared credentials file > shared config file, and the refusals, which
// must never quote a secret. Each case sets its own environment and files and restores the process environment.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bedrock/config.hpp"
#include "bedrock/sigv4.hpp"
#include "code_interpreter/errors.hpp"

namespace fs = std::filesystem;
using code_interpreter::AwsCredentials;
using code_interpreter::BedrockOptions;
using code_interpreter::ErrorKind;
using code_interpreter::SandboxStartError;
using code_interpreter::Stage;
using code_interpreter::bedrock::parse_ini;
using code_interpreter::bedrock::resolve_config;

namespace {

constexpr const char* kSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
constexpr const char* kToken = "FwoGZXIvYXdzEXAMPLESESSIONTOKEN";

// Every variable resolve_config reads. A case starts with all of them unset and a HOME without ~/.aws files, and
// the values the process had are put back when the case ends.
constexpr std::array kVariables = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    "AWS_PROFILE",       "AWS_REGION",            "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",  "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE",
    "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "HOME"};

class Environment {
 public:
  Environment() {
    char pattern[] = "/tmp/ci-bedrock-config-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    for (const char* name : kVariables) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
      ::unsetenv(name);
    }
    set("HOME", dir_.string());
  }
  ~Environment() {
    for (const auto& [name, value] : saved_) {
      if (value) ::setenv(name, value->c_str(), 1);
      else ::unsetenv(name);
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  static void set(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

  /// Writes `text` to `relative` under the case's directory (creating parents) and returns its path.
  fs::path write(const std::string& relative, const std::string& text) const {
    const fs::path path = dir_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  [[nodiscard]] const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

BedrockOptions with_region(std::string region = "us-east-1") {
  BedrockOptions o;
  o.region = std::move(region);
  return o;
}

void set_env_credentials() {
  Environment::set("AWS_ACCESS_KEY_ID", "AKIDENVIRONMENT");
  Environment::set("AWS_SECRET_ACCESS_KEY", kSecret);
}

// The refusal resolve_config throws for `options`, checked to be a configure-stage SandboxStartError of `kind`
// that quotes neither the secret nor the session token.
SandboxStartError refusal(const BedrockOptions& options, ErrorKind kind) {
  try {
    (void)resolve_config(options);
  } catch (const SandboxStartError& e) {
    CHECK(e.stage() == Stage::kConfigure);
    CHECK(e.kind() == kind);
    CHECK_FALSE(e.transient());
    const std::string message = e.what();
    CHECK(message.find(kSecret) == std::string::npos);
    CHECK(message.find(kToken) == std::string::npos);
    return e;
  }
  FAIL("resolve_config must throw");
  throw std::logic_error("unreachable");
}

}  // namespace

// ---- parse_ini ----

TEST_CASE("parse_ini: sections, key = value pairs, comments and blank lines", "[bedrock_config]") {
  const auto ini = parse_ini(
      "# a comment\n"
      "; another comment\n"
      "\n"
      "[default]\n"
      "aws_access_key_id = AKID1\n"
      "aws_secret_access_key=secret/with=equals\n"
      "\n"
      "[profile ci]\n"
      "region = eu-west-1\n"
      "  # an indented comment\n"
      "output = json\n");
  REQUIRE(ini.size() == 2);
  CHECK(ini.at("default").at("aws_access_key_id") == "AKID1");
  CHECK(ini.at("default").at("aws_secret_access_key") == "secret/with=equals");  // split at the first '='
  CHECK(ini.at("profile ci").at("region") == "eu-west-1");
  CHECK(ini.at("profile ci").at("output") == "json");
  CHECK(ini.at("profile ci").size() == 2);
}

TEST_CASE("parse_ini: spacing is trimmed, keys are lower-cased, values and section names keep their case",
          "[bedrock_config]") {
  const auto ini = parse_ini("  [ Profile Dev ]  \r\n\tAWS_Access_Key_ID\t=\t AKIDMixedCase \r\nRegion=us-west-2\r\n");
  REQUIRE(ini.count("Profile Dev") == 1);
  const auto& section = ini.at("Profile Dev");
  CHECK(section.at("aws_access_key_id") == "AKIDMixedCase");
  CHECK(section.at("region") == "us-west-2");
  CHECK(section.count("AWS_Access_Key_ID") == 0);
}

TEST_CASE("parse_ini: empty sections are kept, lines before any section or without '=' are ignored, the last "
          "value wins",
          "[bedrock_config]") {
  const auto ini = parse_ini("orphan = 1\n[empty]\n[s]\nno equals sign here\nkey = first\nkey = second\nlast=x");
  REQUIRE(ini.size() == 2);
  CHECK(ini.at("empty").empty());
  CHECK(ini.at("s").size() == 2);
  CHECK(ini.at("s").at("key") == "second");
  CHECK(ini.at("s").at("last") == "x");  // no final newline
  CHECK(parse_ini("").empty());
}

// ---- credentials ----

TEST_CASE("resolve_config: credentials from options win over the environment and the files", "[bedrock_config]") {
  Environment env;
  set_env_credentials();
  env.write(".aws/credentials", "[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = filesecret\n");
  auto options = with_region();
  options.credentials = AwsCredentials{"AKIDOPTIONS", kSecret, kToken};
  const auto config = resolve_config(options);
  CHECK(config.credentials.access_key_id == "AKIDOPTIONS");
  CHECK(config.credentials.secret_access_key == kSecret);
  CHECK(config.credentials.session_token == kToken);
  CHECK(config.credentials_source == "options");
}

TEST_CASE("resolve_config: the environment wins over the shared files, AWS_SESSION_TOKEN comes with it",
          "[bedrock_config]") {
  Environment env;
  set_env_credentials();
  Environment::set("AWS_SESSION_TOKEN", kToken);
  env.write(".aws/credentials", "[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = filesecret\n");
  const auto config = resolve_config(with_region());
  CHECK(config.credentials.access_key_id == "AKIDENVIRONMENT");
  CHECK(config.credentials.secret_access_key == kSecret);
  CHECK(config.credentials.session_token == kToken);
  CHECK(config.credentials_source == "environment");
}

TEST_CASE("resolve_config: an endpoint with a query or a fragment is refused, since paths are appended to it",
          "[bedrock_config]") {
  Environment env;
  set_env_credentials();
  auto options = with_region();
  for (const char* endpoint : {"https://example.com/?x=1", "https://example.com#frag", "http://127.0.0.1:4566?"}) {
    INFO(endpoint);
    options.endpoint_url = endpoint;
    const auto e = refusal(options, ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()) == "the Bedrock endpoint must not contain a query or a fragment ('?' or '#')");
  }
}

TEST_CASE("resolve_config: a message or output cap of 0 is refused", "[bedrock_config]") {
  Environment env;
  set_env_credentials();
  for (int which = 0; which < 2; ++which) {
    auto options = with_region();
    (which == 0 ? options.max_message_bytes : options.max_output_bytes) = 0;
    const auto e = refusal(options, ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()) == "max_message_bytes and max_output_bytes must be positive");
  }
}

TEST_CASE("resolve_config: an access key id without its secret in the environment falls through to the files",
          "[bedrock_config]") {
  Environment env;
  Environment::set("AWS_ACCESS_KEY_ID", "AKIDENVIRONMENT");
  Environment::set("AWS_SECRET_ACCESS_KEY", "");  // empty counts as unset
  env.write(".aws/credentials", "[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = filesecret\n");
  const auto config = resolve_config(with_region());
  CHECK(config.credentials.access_key_id == "AKIDFILE");
  CHECK(config.credentials_source == "credentials file");
}

TEST_CASE("resolve_config: the credentials file wins over the config file, ~/.aws is the default location",
          "[bedrock_config]") {
  Environment env;
  env.write(".aws/credentials",
            "[default]\naws_access_key_id = AKIDCREDENTIALS\naws_secret_access_key = credsecret\n"
            "aws_session_token = credtoken\n");
  env.write(".aws/config", "[default]\naws_access_key_id = AKIDCONFIG\naws_secret_access_key = configsecret\n");
  const auto config = resolve_config(with_region());
  CHECK(config.credentials.access_key_id == "AKIDCREDENTIALS");
  CHECK(config.credentials.secret_access_key == "credsecret");
  CHECK(config.credentials.session_token == "credtoken");
  CHECK(config.credentials_source == "credentials file");
}

TEST_CASE("resolve_config: the config file is the last source of credentials", "[bedrock_config]") {
  Environment env;
  env.write(".aws/credentials", "[other]\naws_access_key_id = AKIDOTHER\naws_secret_access_key = othersecret\n");
  env.write(".aws/config", "[default]\naws_access_key_id = AKIDCONFIG\naws_secret_access_key = configsecret\n");
  const auto config = resolve_config(with_region());
  CHECK(config.credentials.access_key_id == "AKIDCONFIG");
  CHECK(config.credentials.session_token.empty());
  CHECK(config.credentials_source == "config file");
}

TEST_CASE("resolve_config: a named profile is '[name]' in the credentials file and '[profile name]' in the config "
          "file, options.profile wins over AWS_PROFILE",
          "[bedrock_config]") {
  Environment env;
  const auto credentials = env.write(
      "elsewhere/credentials",
      "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s0\n"
      "[ci]\naws_access_key_id = AKIDCI\naws_secret_access_key = s1\n"
      "[profile ci]\naws_access_key_id = AKIDWRONGFORM\naws_secret_access_key = s2\n");
  const auto config_file = env.write(
      "elsewhere/config",
      "[ci]\nregion = eu-north-1\n"
      "[profile ci]\nregion = ap-south-1\n"
      "[profile cfgonly]\naws_access_key_id = AKIDCFGONLY\naws_secret_access_key = s3\nregion = sa-east-1\n");
  Environment::set("AWS_SHARED_CREDENTIALS_FILE", credentials.string());
  Environment::set("AWS_CONFIG_FILE", config_file.string());
  Environment::set("AWS_PROFILE", "ci");

  const auto ci = resolve_config({});
  CHECK(ci.credentials.access_key_id == "AKIDCI");
  CHECK(ci.region == "ap-south-1");

  BedrockOptions options;
  options.profile = "cfgonly";
  const auto cfgonly = resolve_config(options);
  CHECK(cfgonly.credentials.access_key_id == "AKIDCFGONLY");
  CHECK(cfgonly.credentials_source == "config file");
  CHECK(cfgonly.region == "sa-east-1");
}

TEST_CASE("resolve_config: a profile named in the options skips the environment's keys, as --profile does, "
          "AWS_PROFILE does not",
          "[bedrock_config]") {
  Environment env;
  set_env_credentials();
  env.write(".aws/credentials", "[ci]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profilesecret\n");

  BedrockOptions named = with_region();
  named.profile = "ci";
  const auto config = resolve_config(named);
  CHECK(config.credentials.access_key_id == "AKIDPROFILE");
  CHECK(config.credentials.secret_access_key == "profilesecret");
  CHECK(config.credentials_source == "credentials file");

  Environment::set("AWS_PROFILE", "ci");
  const auto from_variable = resolve_config(with_region());
  CHECK(from_variable.credentials.access_key_id == "AKIDENVIRONMENT");
  CHECK(from_variable.credentials_source == "environment");

  // The named profile has no keys: the environment's are not used instead.
  named.profile = "absent";
  const auto e = refusal(named, ErrorKind::kUnauthenticated);
  CHECK(std::string(e.what()).find("profile 'absent'") != std::string::npos);
}

// ---- region ----

TEST_CASE("resolve_config: region from options, then AWS_REGION, then AWS_DEFAULT_REGION, then the profile",
          "[bedrock_config]") {
  Environment env;
  set_env_credentials();
  env.write(".aws/config", "[default]\nregion = ca-central-1\n");
  Environment::set("AWS_REGION", "eu-west-3");
  Environment::set("AWS_DEFAULT_REGION", "ap-northeast-1");

  CHECK(resolve_config(with_region("us-west-2")).region == "us-west-2");
  CHECK(resolve_config({}).region == "eu-west-3");
  ::unsetenv("AWS_REGION");
  CHECK(resolve_config({}).region == "ap-northeast-1");
  Environment::set("AWS_DEFAULT_REGION", "");  // empty counts as unset
  CHECK(resolve_config({}).region == "ca-central-1");
}

// ---- endpoint ----

TEST_CASE("resolve_config: endpoint from options, then AWS_ENDPOINT_URL_BEDROCK_AGENTCORE, then AWS_ENDPOINT_URL, "
          "then the region's standard host",
          "[bedrock_config]") {
  Environment env;
  set_env_credentials();
  Environment::set("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", "http://127.0.0.1:4566/");
  Environment::set("AWS_ENDPOINT_URL", "https://general.example");

  auto options = with_region();
  options.endpoint_url = "https://agentcore.example//";
  CHECK(resolve_config(options).endpoint == "https://agentcore.example");  // trailing slashes dropped
  CHECK(resolve_config(with_region()).endpoint == "http://127.0.0.1:4566");
  ::unsetenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE");
  CHECK(resolve_config(with_region()).endpoint == "https://general.example");
  ::unsetenv("AWS_ENDPOINT_URL");
  CHECK(resolve_config(with_region()).endpoint == "https://bedrock-agentcore.us-east-1.amazonaws.com");
  CHECK(resolve_config(with_region("eu-central-1")).endpoint == "https://bedrock-agentcore.eu-central-1.amazonaws.com");
  CHECK(resolve_config(with_region("cn-north-1")).endpoint == "https://bedrock-agentcore.cn-north-1.amazonaws.com.cn");
  CHECK(resolve_config(with_region("cn-northwest-1")).endpoint ==
        "https://bedrock-agentcore.cn-northwest-1.amazonaws.com.cn");
}

// ---- refusals ----

TEST_CASE("resolve_config: no credentials anywhere is kUnauthenticated and names the profile", "[bedrock_config]") {
  Environment env;
  env.write(".aws/credentials", "[other]\naws_access_key_id = AKIDOTHER\naws_secret_access_key = s\n");
  auto options = with_region();
  options.profile = "missing";
  const auto e = refusal(options, ErrorKind::kUnauthenticated);
  CHECK(std::string(e.what()).find("no AWS credentials") == 0);
  CHECK(std::string(e.what()).find("profile 'missing'") != std::string::npos);
}

TEST_CASE("resolve_config: credentials without an id or a secret are refused", "[bedrock_config]") {
  Environment env;
  auto options = with_region();
  options.credentials = AwsCredentials{"AKIDOPTIONS", "", kToken};
  const auto no_secret = refusal(options, ErrorKind::kUnauthenticated);
  CHECK(std::string(no_secret.what()).find("incomplete") != std::string::npos);
  options.credentials = AwsCredentials{"", kSecret, kToken};
  (void)refusal(options, ErrorKind::kUnauthenticated);
}

TEST_CASE("resolve_config: no region is kInvalidArgument", "[bedrock_config]") {
  Environment env;
  set_env_credentials();
  Environment::set("AWS_SESSION_TOKEN", kToken);
  env.write(".aws/config", "[profile other]\nregion = us-east-1\n");
  const auto e = refusal({}, ErrorKind::kInvalidArgument);
  CHECK(std::string(e.what()).find("no AWS region") == 0);
}

TEST_CASE("resolve_config: a region other than lower-case letters, digits and '-' is refused", "[bedrock_config]") {
  Environment env;
  set_env_credentials();
  for (const char* region : {"US-EAST-1", "us east 1", "us-east-1.evil.example", "us-east-1/x", "us_east_1"}) {
    INFO(region);
    const auto e = refusal(with_region(region), ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()).find("not an AWS region") == 0);
  }
  Environment::set("AWS_REGION", "Eu-West-1");
  (void)refusal({}, ErrorKind::kInvalidArgument);
}

TEST_CASE("resolve_config: an endpoint without http:// or https://, or with a space or a control character, is "
          "refused",
          "[bedrock_config]") {
  Environment env;
  set_env_credentials();
  Environment::set("AWS_SESSION_TOKEN", kToken);
  auto options = with_region();
  for (const char* endpoint :
       {"bedrock-agentcore.us-east-1.amazonaws.com", "ftp://example.com", "HTTPS://example.com"}) {
    INFO(endpoint);
    options.endpoint_url = endpoint;
    const auto e = refusal(options, ErrorKind::kInvalidArgument);
    // The endpoint is not quoted: it may hold a user name and password.
    CHECK(std::string(e.what()) == "the Bedrock endpoint must start with http:// or https://");
  }
  for (const char* endpoint : {"https://example.com/a b", "https://example.com\r\nX-Injected: 1"}) {
    options.endpoint_url = endpoint;
    (void)refusal(options, ErrorKind::kInvalidArgument);
  }
  Environment::set("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", "localhost:4566");
  (void)refusal(with_region(), ErrorKind::kInvalidArgument);
}

TEST_CASE("resolve_config: an endpoint libcurl cannot parse, without a host, with a port over 65535 or with a user "
          "name is refused at configure",
          "[bedrock_config]") {
  Environment env;
  set_env_credentials();
  auto options = with_region();
  for (const char* endpoint : {"http://:80", "http://[::1", "http://127.0.0.1:99999", "https://"}) {
    INFO(endpoint);
    options.endpoint_url = endpoint;
    (void)refusal(options, ErrorKind::kInvalidArgument);
  }
  options.endpoint_url = "http://127.0.0.1:99999";
  CHECK(std::string(refusal(options, ErrorKind::kInvalidArgument).what()) ==
        "the Bedrock endpoint is not a URL with a host (and a port of at most 65535)");
  for (const char* endpoint : {"http://user:hunter2@127.0.0.1:4566", "https://user@example.com"}) {
    INFO(endpoint);
    options.endpoint_url = endpoint;
    const std::string message = refusal(options, ErrorKind::kInvalidArgument).what();
    CHECK(message == "the Bedrock endpoint must not contain a user name or password");
  }
  // What is fine stays fine: a port, a path prefix, an IPv6 literal.
  for (const char* endpoint : {"http://127.0.0.1:4566", "https://example.com/prefix", "http://[::1]:4566"}) {
    INFO(endpoint);
    options.endpoint_url = endpoint;
    CHECK(resolve_config(options).endpoint == endpoint);
  }
}

TEST_CASE("resolve_config: an access key id with ':' or a control character, or a secret or token with a control "
          "character, is refused without quoting it",
          "[bedrock_config]") {
  Environment env;
  auto options = with_region();
  options.credentials = AwsCredentials{"AKID:EXTRA", kSecret, kToken};
  const auto colon = refusal(options, ErrorKind::kInvalidArgument);
  CHECK(std::string(colon.what()).find("AKID:EXTRA") == std::string::npos);
  options.credentials = AwsCredentials{"AKID\nX", kSecret, kToken};
  (void)refusal(options, ErrorKind::kInvalidArgument);
  options.credentials = AwsCredentials{"AKIDOK", std::string(kSecret) + "\n", kToken};
  (void)refusal(options, ErrorKind::kInvalidArgument);
  options.credentials = AwsCredentials{"AKIDOK", kSecret, std::string(kToken) + "\r\nX-Injected: 1"};
  (void)refusal(options, ErrorKind::kInvalidArgument);

  // The same checks apply to credentials from the environment.
  Environment::set("AWS_ACCESS_KEY_ID", "AKID:ENV");
  Environment::set("AWS_SECRET_ACCESS_KEY", kSecret);
  (void)refusal(with_region(), ErrorKind::kInvalidArgument);
}

TEST_CASE("resolve_config: no refusal quotes the secret or the session token", "[bedrock_config]") {
  Environment env;
  Environment::set("AWS_ACCESS_KEY_ID", "AKIDENVIRONMENT");
  Environment::set("AWS_SECRET_ACCESS_KEY", kSecret);
  Environment::set("AWS_SESSION_TOKEN", kToken);
  // Each refusal in turn, with the secret and token present: refusal() checks every message.
  (void)refusal({}, ErrorKind::kInvalidArgument);                       // no region
  (void)refusal(with_region("BAD"), ErrorKind::kInvalidArgument);       // bad region
  auto options = with_region();
  options.endpoint_url = "no-scheme.example";
  (void)refusal(options, ErrorKind::kInvalidArgument);                  // bad endpoint
  options = with_region();
  options.credentials = AwsCredentials{"AKID:X", kSecret, kToken};
  (void)refusal(options, ErrorKind::kInvalidArgument);                  // bad key id
  options.credentials = AwsCredentials{"AKIDOK", std::string(kSecret) + "\x7f", kToken};
  (void)refusal(options, ErrorKind::kInvalidArgument);                  // bad secret
  options.credentials = AwsCredentials{"AKIDOK", "", kToken};
  (void)refusal(options, ErrorKind::kUnauthenticated);                  // incomplete
  ::unsetenv("AWS_ACCESS_KEY_ID");
  (void)refusal(with_region(), ErrorKind::kUnauthenticated);            // none (the secret alone is not enough)
}

TEST_CASE("resolve_config: a request_timeout of 0 or over 24 hours is refused", "[bedrock_config]") {
  Environment env;
  set_env_credentials();
  for (const auto timeout : {std::chrono::milliseconds(0), std::chrono::milliseconds(-5),
                             std::chrono::milliseconds::max()}) {
    auto options = with_region();
    options.request_timeout = timeout;
    const auto e = refusal(options, ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()) == "request_timeout must be above 0 and at most 24 hours");
  }
}

TEST_CASE("redact_signatures hides signatures, Credential= values and access key ids", "[bedrock]") {
  std::string text =
      "Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/bedrock-agentcore/"
      "aws4_request, SignedHeaders=host, Signature=0123abcdef; key ASIAZZZZZZZZZZZZZZZZ, credential=mykey&x=1";
  code_interpreter::bedrock::redact_signatures(text);
  CHECK(text ==
        "Authorization: AWS4-HMAC-SHA256 Credential=[redacted]/20260101/us-east-1/bedrock-agentcore/aws4_request, "
        "SignedHeaders=host, Signature=[redacted]; key [redacted], credential=[redacted]&x=1");
  std::string near_misses = "AKIAIOSFODNN7EXAMPL XAKIAIOSFODNN7EXAMPLE AKIAIOSFODNN7EXAMPLEX akiaiosfodnn7example";
  code_interpreter::bedrock::redact_signatures(near_misses);
  CHECK(near_misses == "AKIAIOSFODNN7EXAMPL XAKIAIOSFODNN7EXAMPLE AKIAIOSFODNN7EXAMPLEX akiaiosfodnn7example");
}
