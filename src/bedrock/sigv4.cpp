#include "bedrock/sigv4.hpp"

#include <cctype>
#include <string_view>

#include <curl/curl.h>

#include "core/digest.hpp"

namespace code_interpreter::bedrock {

SigV4::SigV4(std::string_view region, const AwsCredentials& credentials)
    : scope_("aws:amz:" + std::string(region) + ":bedrock-agentcore"),
      userpwd_(credentials.access_key_id + ":" + credentials.secret_access_key),
      session_token_(credentials.session_token) {}

void SigV4::sign(http::Request& request) const {
  // As a header the session token is signed too.
  if (!session_token_.empty()) request.headers.emplace_back("x-amz-security-token", session_token_);
  bool has_payload_hash = false;
  for (const auto& [name, value] : request.headers) {
    std::string lowered(name);
    for (auto& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lowered == "x-amz-content-sha256") has_payload_hash = true;
  }
  // libcurl takes the payload hash from this header when present, and signs the header too.
  if (!has_payload_hash && request.multipart.empty())
    request.headers.emplace_back("x-amz-content-sha256", detail::sha256_hex(request.body));
  request.sign = [this](void* easy) {
    curl_easy_setopt(static_cast<CURL*>(easy), CURLOPT_AWS_SIGV4, scope_.c_str());
    curl_easy_setopt(static_cast<CURL*>(easy), CURLOPT_USERPWD, userpwd_.c_str());
  };
}

namespace {

bool upper_or_digit(char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// Replaces what follows each `key` (any case) up to the first byte `value_ends` rejects with "[redacted]".
template <typename Stop>
void redact_after(std::string& text, std::string_view key, Stop value_ends) {
  for (std::size_t at = 0; at + key.size() <= text.size(); ++at) {
    bool match = true;
    for (std::size_t i = 0; i < key.size() && match; ++i)
      match = std::tolower(static_cast<unsigned char>(text[at + i])) == key[i];
    if (!match) continue;
    const std::size_t from = at + key.size();
    std::size_t end = from;
    while (end < text.size() && !value_ends(text[end])) ++end;
    if (end > from) text.replace(from, end - from, "[redacted]");
    at = from - 1;
  }
}

}  // namespace

void redact_signatures(std::string& text) {
  redact_after(text, "signature=", [](char c) { return !std::isxdigit(static_cast<unsigned char>(c)); });
  // Credential=<access key id>/<date>/<region>/<service>/aws4_request: the key id, up to its '/'.
  redact_after(text, "credential=", [](char c) {
    return c == '/' || c == ',' || c == '&' || c == '"' || c == '\'' || std::isspace(static_cast<unsigned char>(c));
  });
  // An access key id anywhere: AKIA (long-term) or ASIA (temporary) and 16 upper-case letters or digits.
  for (std::size_t at = 0; at + 20 <= text.size(); ++at) {
    const std::string_view prefix(text.data() + at, 4);
    if (prefix != "AKIA" && prefix != "ASIA") continue;
    if (at > 0 && upper_or_digit(text[at - 1])) continue;
    std::size_t end = at + 4;
    while (end < text.size() && upper_or_digit(text[end])) ++end;
    if (end - at != 20) continue;
    text.replace(at, 20, "[redacted]");
  }
}

}  // namespace code_interpreter::bedrock
