// AWS SigV4 for AgentCore (docs/protocols/bedrock.md "Endpoints and SigV4 signing"). libcurl signs (CURLOPT_AWS_SIGV4):
// this library computes no signature of its own. What is AWS-specific lives here — the signing scope, the
// credentials handed to libcurl, the headers the signature must cover — and the generic client only calls the
// Request::sign hook this sets (src/http/http_client.hpp). The secrets go to libcurl and nowhere else: never a log
// line, an error or a result (docs/backends/bedrock.md "Secrets").
#pragma once

#include <string>
#include <string_view>

#include "code_interpreter/bedrock_sandbox.hpp"
#include "http/http_client.hpp"

namespace code_interpreter::bedrock {

class SigV4 {
 public:
  SigV4(std::string_view region, const AwsCredentials& credentials);

  /// Makes `request` a signed one. Adds the headers the signature covers — x-amz-security-token for temporary
  /// credentials (libcurl does not add it), x-amz-content-sha256 of the body (libcurl 7.88 would hash an empty body
  /// for one sent through a read callback, which is how every body is sent) — and sets Request::sign, which hands
  /// the scope and the credentials to libcurl. The request must not outlive this object, and its body must be final.
  void sign(http::Request& request) const;

 private:
  std::string scope_;          // "aws:amz:<region>:bedrock-agentcore"
  std::string userpwd_;        // "<access key id>:<secret access key>" (a secret)
  std::string session_token_;  // a secret; empty for long-term credentials
};

/// A request signature the service echoed (an Authorization header or a presigned query quoted in a message) is a
/// secret too, but libcurl computed it, so it is found by its shape: the hex digits after "signature=", any case,
/// become "[redacted]". So does the access key id: the value after "Credential=" (any case) up to its '/', ',', '&',
/// quote or space, and every AKIA or ASIA followed by 16 upper-case letters or digits (the AWS key id shapes) that
/// is not part of a longer such run.
void redact_signatures(std::string& text);

}  // namespace code_interpreter::bedrock
