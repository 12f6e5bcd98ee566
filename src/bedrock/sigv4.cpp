#include "bedrock/sigv4.hpp"

#include <cctype>

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

void redact_signatures(std::string& text) {
  static constexpr std::string_view kKey = "signature=";
  for (std::size_t at = 0; at + kKey.size() <= text.size(); ++at) {
    bool match = true;
    for (std::size_t i = 0; i < kKey.size() && match; ++i)
      match = std::tolower(static_cast<unsigned char>(text[at + i])) == kKey[i];
    if (!match) continue;
    const std::size_t from = at + kKey.size();
    std::size_t end = from;
    while (end < text.size() && std::isxdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end > from) text.replace(from, end - from, "[redacted]");
    at = from - 1;
  }
}

}  // namespace code_interpreter::bedrock
