// docs/errors.md "Answered statuses" and the transport rows of the status table: faults only a transport can have,
// injected through the local servers' fault directives (the fake harness scripts the same outcomes).
#include <algorithm>
#include <initializer_list>

#include "checks.hpp"
#include "harness.hpp"
#include "programs.hpp"

using namespace contract;
namespace ci = code_interpreter;

namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// kError, never ran, retry_safe, named as the protocol names it: http.<status>, or the service's own error type
// (docs/errors.md "Answered statuses").
void check_refused(const ci::ExecutionResult& r, std::initializer_list<std::string_view> names, bool state_lost) {
  CHECK(r.status == ci::ExecutionStatus::kError);
  CHECK(r.exit_code == -1);
  CHECK_FALSE(r.code_error);
  CHECK_FALSE(r.timeout_kind);
  CHECK(r.state_lost == state_lost);
  REQUIRE(r.failure);
  CHECK(r.failure->retry_safe);
  INFO("exception_type: " << r.failure->exception_type);
  CHECK(std::find(names.begin(), names.end(), r.failure->exception_type) != names.end());
}

// The code of prog::kFaultWrite ran (its file is there) or not.
template <class H>
bool fault_code_ran(H& h) {
  return h.sb().download_file("ct_fault.txt") == std::optional<std::string>("ran");
}

}  // namespace

CONTRACT_TRANSPORT_SCENARIO("a bare 502 after the request was sent is UNKNOWN http.502 not retry_safe",
                            "[answered]") {
  TestType h;
  h.inject(Fault::kGateway502);
  const auto r = h.exec(prog::kFaultWrite);
  check_unknown(r, "http.502");
  CHECK_FALSE(r.state_lost);
  CHECK(starts_with(r.error, "execute: HTTP 502"));
  CHECK(ends_with(r.error, "; the request had been sent, so the code may have run"));
  check_success(h.exec(prog::kHi), prog::kHi, "hi\n");  // the next call is unaffected
}

CONTRACT_TRANSPORT_SCENARIO("a 429 before anything ran is ERROR retry_safe and the code did not run",
                            "[answered]") {
  TestType h;
  h.inject(Fault::kThrottled429);
  check_refused(h.exec(prog::kFaultWrite), {"http.429", "aws.ThrottlingException"}, false);
  CHECK_FALSE(fault_code_ran(h));
}

CONTRACT_TRANSPORT_SCENARIO("a 2xx other than the stream's 200 is UNKNOWN http.201", "[answered]") {
  TestType h;
  h.inject(Fault::kStatus201);
  const auto r = h.exec(prog::kFaultWrite);
  check_unknown(r, "http.201");
  CHECK_FALSE(r.state_lost);
}

CONTRACT_TRANSPORT_SCENARIO("a connection cut after the headers is UNKNOWN curl.PARTIAL_FILE", "[transport]") {
  TestType h;
  h.inject(Fault::kResetAfterHeaders);
  const auto r = h.exec(prog::kFaultWrite);
  check_unknown(r, "curl.PARTIAL_FILE");
  CHECK_FALSE(r.state_lost);
  check_success(h.exec(prog::kHi), prog::kHi, "hi\n");
}

CONTRACT_TRANSPORT_SCENARIO("a connection cut after the request was sent with no answer is UNKNOWN",
                            "[transport]") {
  TestType h;
  h.inject(Fault::kResetBeforeAnswer);
  const auto r = h.exec(prog::kFaultWrite);
  CHECK(r.status == ci::ExecutionStatus::kUnknown);
  CHECK(r.exit_code == -1);
  REQUIRE(r.failure);
  CHECK_FALSE(r.failure->retry_safe);
  CHECK(starts_with(r.failure->exception_type, "curl."));
  CHECK_FALSE(r.timeout_kind);
}

CONTRACT_TRANSPORT_SCENARIO("an answer that never comes is TIMEOUT execution at the budget", "[transport][timeout]") {
  TestType h;
  h.inject(Fault::kStall);
  ci::ExecuteOptions options;
  options.timeout = std::chrono::milliseconds(600);
  const auto r = h.exec(prog::kHi, options);
  check_timeout(r, ci::TimeoutKind::kExecution);
  CHECK_FALSE(r.state_lost);
  CHECK(r.stdout_text.empty());
}

CONTRACT_TRANSPORT_SCENARIO("a sandbox gone before the call is ERROR retry_safe with state_lost", "[transport]") {
  TestType h;
  h.inject(Fault::kSandboxGone);
  check_refused(h.exec(prog::kFaultWrite), {"http.502", "aws.ResourceNotFoundException"}, true);
}

CONTRACT_TRANSPORT_SCENARIO("a refused attachment upload is ERROR never ran retry_safe", "[transport][attachments]") {
  TestType h;
  h.inject(Fault::kUploadRefused);
  ci::ExecuteOptions options;
  options.upload_dir = "ct_up";
  options.files = {ci::Attachment::from_bytes("x", "in.txt")};
  const auto r = h.exec(prog::kFaultWrite, options);
  check_refused(r, {"http.507", "upload"}, false);
  CHECK_FALSE(r.duration);
  CHECK(r.stdout_text.empty());
  h.clear_faults();
  CHECK_FALSE(fault_code_ran(h));
}

CONTRACT_SERVER_SCENARIO("a file read answered 503 throws a transient download error with the TransportError nested",
                         "[transport][files]") {
  TestType h;
  h.sb().write_file("ct/a.txt", "a");
  h.inject(Fault::kReadUnavailable);
  try {
    (void)h.sb().read_file("ct/a.txt");
    FAIL("no error");
  } catch (const ci::SandboxExecutionError& e) {
    CHECK(e.stage() == ci::Stage::kDownload);
    CHECK(e.kind() == ci::ErrorKind::kUnavailable);
    CHECK(e.transient());
    const auto* transport = ci::test::nested_transport(e);
    REQUIRE(transport);
    CHECK(transport->kind() == ci::TransportError::Kind::kHttpStatus);
    CHECK(transport->http_status() == 503);
  }
  CHECK(h.sb().download_file("ct/a.txt") == std::nullopt);
  h.clear_faults();
  CHECK(h.sb().read_file("ct/a.txt") == "a");
}

CONTRACT_SERVER_SCENARIO("download_file that gets no answer within its timeout is nullopt", "[transport][files]") {
  TestType h;
  h.sb().write_file("ct/a.txt", "a");
  h.inject(Fault::kReadStall);
  HostDir dir;
  const auto start = std::chrono::steady_clock::now();
  CHECK(h.sb().download_file("ct/a.txt", std::chrono::milliseconds(500)) == std::nullopt);
  CHECK_FALSE(h.sb().download_file_to("ct/a.txt", dir.path() / "a.txt", std::chrono::milliseconds(500)));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(dir.names().empty());
  h.clear_faults();
}
