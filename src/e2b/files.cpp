// E2B's files (docs/protocols/e2b.md "envd health and files", "filesystem.Filesystem"): envd's /files for bytes, its
// filesystem service over unary Connect calls for the rest.
#include "core/file_guards.hpp"
#include "core/nested.hpp"
#include "core/outcome.hpp"
#include "core/temporary_file.hpp"
#include "core/untrusted.hpp"
#include "e2b/e2b_impl.hpp"

namespace code_interpreter {
namespace {

using nlohmann::json;
using detail::Deadline;
using std::chrono::milliseconds;

}  // namespace

http::Exchange E2BSandbox::Impl::upload(const std::string& dir, const std::vector<Attachment>& files,
                                        std::stop_token cancel) {
  auto request = stub.upload_request(dir, files);
  request.cancel = std::move(cancel);
  return http::perform_with_retries(client, request);
}

void E2BSandbox::Impl::throw_file_error(const http::Exchange& ex, Stage stage, std::string_view what) const {
  e2b::throw_call_error(stub, ex, stage, what);
}

void e2b::throw_call_error(const E2BStub& stub, const http::Exchange& ex, Stage stage, std::string_view what) {
  std::string said = ex.ok() ? stub.service_text(ex.response.body) : std::string();
  ErrorKind kind = http::error_kind(ex);
  std::string message = std::string(what) + " failed";
  if (ex.ok() && e2b::is_gone_answer(ex.response.status, ex.response.body)) {
    kind = ErrorKind::kUnavailable;
    message += ": the sandbox is gone";
  } else if (!said.empty()) {
    message += ": " + said;
  } else if (!ex.ok()) {
    message += ": " + std::string(http::to_transport_error(ex, what).what());
  }
  // A Connect error names its code (docs/protocols/e2b.md "Connect calls and their JSON").
  if (ex.ok())
    if (const auto code = e2b::connect_error_code(ex.response.body)) kind = e2b::connect_error_kind(*code);
  detail::throw_nested(SandboxExecutionError(std::move(message), stage, kind), http::to_transport_error(ex, what, said));
}

http::Exchange E2BSandbox::Impl::call(http::Request request, Stage stage, std::string_view what) {
  const auto guard = begin_call();
  request.cancel = guard->token();
  auto ex = http::perform_with_retries(client, request);
  if (!ex.success()) throw_file_error(ex, stage, what);
  return ex;
}

json E2BSandbox::Impl::rpc(std::string_view method, const json& body, Stage stage, std::string_view what) {
  const auto ex = call(stub.rpc_request(method, body, what), stage, what);
  json answer = detail::parse_untrusted_json(ex.response.body);
  if (!answer.is_object())
    throw SandboxExecutionError(std::string(what) + ": the sandbox answered with malformed JSON", stage, ErrorKind::kInternal);
  return answer;
}

// ---- E2BSandbox: files ----

void E2BSandbox::do_write_file(std::string_view path, std::string_view data) {
  auto request = impl_->stub.files_request(http::Operation::kE2BUpload, "POST", path);
  request.multipart.push_back({"file", std::string(path), "application/octet-stream", data, std::nullopt});
  (void)impl_->call(std::move(request), Stage::kUpload, "write_file");
}

std::string E2BSandbox::do_read_file(std::string_view path, std::optional<std::uint64_t> max_bytes) {
  const auto call = impl_->begin_call();
  auto request = impl_->stub.files_request(http::Operation::kE2BReadFile, "GET", path);
  request.cancel = call->token();
  // Counted by the client's write callback on the bytes received (decoded), whatever Content-Length says.
  const std::uint64_t cap = max_bytes.value_or(impl_->stub.options.max_download_bytes);
  request.max_body = cap;
  auto ex = http::perform_with_retries(impl_->client, request);
  if (ex.failure == http::Failure::kTooLarge) throw detail::over_cap_error(path, cap);
  if (!ex.success()) impl_->throw_file_error(ex, Stage::kDownload, "read_file");
  return std::move(ex.response.body);
}

std::vector<FileInfo> E2BSandbox::do_list_files(std::string_view dir) {
  return e2b::E2BStub::decode_entries(
      impl_->rpc("filesystem.Filesystem/ListDir", {{"path", dir}, {"depth", 1}}, Stage::kDownload, "list_files"));
}

void E2BSandbox::do_remove_file(std::string_view path) {
  // envd's Remove of a missing path is a silent no-op (docs/protocols/e2b.md "filesystem.Filesystem"); remove_file
  // promises kNotFound, which Stat's not_found gives.
  (void)impl_->rpc("filesystem.Filesystem/Stat", {{"path", path}}, Stage::kUpload, "remove_file");
  (void)impl_->rpc("filesystem.Filesystem/Remove", {{"path", path}}, Stage::kUpload, "remove_file");
}

void E2BSandbox::do_make_dir(std::string_view path) {
  const auto call = impl_->begin_call();
  auto request = impl_->stub.rpc_request("filesystem.Filesystem/MakeDir", {{"path", path}}, "make_dir");
  request.cancel = call->token();
  const auto ex = http::perform_with_retries(impl_->client, request);
  if (ex.success()) return;
  // already_exists: the directory is there, which is what make_dir promises. A file in the way is
  // invalid_argument and stays an error (docs/protocols/e2b.md "filesystem.Filesystem").
  if (ex.ok() && e2b::connect_error_code(ex.response.body) == std::optional<std::string>("already_exists")) return;
  impl_->throw_file_error(ex, Stage::kUpload, "make_dir");
}

std::optional<std::string> E2BSandbox::do_download_file(std::string_view path, Timeout timeout,
                                                        std::optional<std::uint64_t> max_bytes) {
  try {
    const auto call = impl_->begin_call();
    auto request = impl_->stub.files_request(http::Operation::kE2BReadFile, "GET", path);
    request.cancel = call->token();
    const std::uint64_t cap = max_bytes.value_or(impl_->stub.options.max_download_bytes);
    request.max_body = cap;
    // The timeout bounds the whole call: retries get only what is left of it, and none starts past it.
    const auto deadline = Deadline::after(timeout, impl_->stub.options.request_timeout);
    request.timeout = deadline.bound(milliseconds(0));
    auto ex = http::perform_with_retries(impl_->client, request, {}, Impl::deadline_hooks(deadline));
    if (ex.failure == http::Failure::kTooLarge) detail::warn_over_cap("download_file", path, cap);
    if (!ex.success()) return std::nullopt;
    return std::move(ex.response.body);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const SandboxNotInitializedError&) {
    throw;
  } catch (...) {
    return std::nullopt;
  }
}

bool E2BSandbox::do_download_file_to(std::string_view path, const std::filesystem::path& destination, Timeout timeout,
                                     std::optional<std::uint64_t> max_bytes) {
  const auto call = impl_->begin_call();
  // Streamed into a temporary file beside the destination, renamed into place only when complete.
  return detail::write_via_temporary(destination, [&](std::ofstream& out) {
    auto request = impl_->stub.files_request(http::Operation::kE2BDownloadTo, "GET", path);
    request.cancel = call->token();
    if (timeout) request.timeout = timeout->count() > 0 ? *timeout : milliseconds(0);
    int status = 0;
    request.on_headers = [&](int s) { status = s; };
    // Counted on the bytes received; the transfer stops at the first piece past the cap.
    detail::ByteCap count(max_bytes.value_or(impl_->stub.options.max_download_bytes));
    request.on_body = [&](std::string_view piece) {
      if (status != 200) return true;  // an error body is not the file
      if (!count.add(piece.size())) return false;
      out.write(piece.data(), static_cast<std::streamsize>(piece.size()));
      return static_cast<bool>(out);
    };
    const auto ex = impl_->client.perform(request);
    if (count.over()) detail::warn_over_cap("download_file_to", path, count.cap());
    return ex.success() && status == 200 && !count.over();
  });
}


// ---- E2BSandbox: exists, get_info, copy, move ----

bool E2BSandbox::do_exists(std::string_view path) {
  const auto call = impl_->begin_call();
  auto request = impl_->stub.rpc_request("filesystem.Filesystem/Stat", {{"path", path}}, "exists");
  request.cancel = call->token();
  const auto ex = http::perform_with_retries(impl_->client, request);
  if (ex.success()) {
    const json answer = detail::parse_untrusted_json(ex.response.body);
    if (answer.is_object() && answer.contains("entry") && answer["entry"].is_object()) return true;
    throw SandboxExecutionError("exists: the sandbox answered with malformed JSON", Stage::kDownload, ErrorKind::kInternal);
  }
  // Only envd's own answer for a missing path says "absent": Stat's Connect error not_found, which Connect sends
  // with status 404 (docs/protocols/e2b.md "Connect calls and their JSON"). A body that says not_found under any
  // other status (a proxy's, a 5xx) is not that answer: it throws, as a transport failure or a gone sandbox does.
  const bool says_not_found =
      ex.ok() && e2b::connect_error_code(ex.response.body) == std::optional<std::string>("not_found");
  if (says_not_found && ex.response.status == 404) return false;
  if (says_not_found && !e2b::is_gone_answer(ex.response.status, ex.response.body)) {
    // Not envd's answer, so not "absent" either: the status decides the kind (a 5xx is kUnavailable), never the
    // body's not_found, which a caller could take for a missing path.
    const std::string said = impl_->stub.service_text(ex.response.body);
    detail::throw_nested(
        SandboxExecutionError("exists failed: HTTP " + std::to_string(ex.response.status) + " with a not_found body (" +
                                  said + "), which is not envd's answer for a missing path",
                              Stage::kDownload, http::error_kind(ex)),
        http::to_transport_error(ex, "exists", said));
  }
  if (ex.ok() && ex.response.status == 404)  // a 404 without envd's error: not an answer about the path either
    detail::throw_nested(SandboxExecutionError("exists: the sandbox answered HTTP 404 without envd's not_found error",
                                               Stage::kDownload, ErrorKind::kInternal),
                         http::to_transport_error(ex, "exists", impl_->stub.service_text(ex.response.body)));
  impl_->throw_file_error(ex, Stage::kDownload, "exists");
}

FileInfo E2BSandbox::do_get_info(std::string_view path) {
  const json answer = impl_->rpc("filesystem.Filesystem/Stat", {{"path", path}}, Stage::kDownload, "get_info");
  const auto entry = answer.find("entry");
  if (entry == answer.end() || !entry->is_object())
    throw SandboxExecutionError("get_info: the sandbox answered without an entry", Stage::kDownload, ErrorKind::kInternal);
  auto info = e2b::E2BStub::decode_entry(*entry);
  if (info.type == FileType::kDirectory) info.size = 0;  // envd gives a directory's block size (4096)
  return info;
}

void E2BSandbox::do_move(std::string_view path, std::string_view to) {
  // envd's Move makes the destination's parents and renames (docs/protocols/e2b.md "filesystem.Filesystem").
  (void)impl_->rpc("filesystem.Filesystem/Move", {{"source", path}, {"destination", to}}, Stage::kUpload, "move");
}

void E2BSandbox::do_copy(std::string_view from, std::string_view to) {
  // envd has no copy: the sandbox's own cp does it, the paths passed as environment variables so no path is ever
  // read as shell syntax. Stat first, so a missing source is kNotFound as everywhere else. `~` and `~/...` are the
  // home directory, as envd reads them. A directory (not a link to one: cp -a copies the link) into or onto itself,
  // or "/", is refused before anything is made, with the script's own exit status 22 (EINVAL), as on the other
  // backends; where the sandbox has no realpath, cp's own check is left. Command substitutions end in "." so that
  // a name ending in a newline keeps it.
  (void)impl_->rpc("filesystem.Filesystem/Stat", {{"path", from}}, Stage::kUpload, "copy");
  constexpr int kIntoItself = 22;  // the exit status the script below gives
  CommandOptions options;
  options.env = {{"CI_COPY_FROM", std::string(from)}, {"CI_COPY_TO", std::string(to)}};
  const auto r = execute_command(R"sh(from=$CI_COPY_FROM; to=$CI_COPY_TO
case $from in '~') from=$HOME ;; '~/'*) from=$HOME/${from#??} ;; esac
case $to in '~') to=$HOME ;; '~/'*) to=$HOME/${to#??} ;; esac
if [ -d "$from" ] && [ ! -L "$from" ] && command -v realpath >/dev/null 2>&1; then
  f=$(realpath -m -- "$from"; echo .); f=${f%?}; f=${f%?}
  t=$(realpath -m -- "$to"; echo .); t=${t%?}; t=${t%?}
  inside=
  case $f in /) inside=1 ;; *) case "$t/" in "$f"/*) inside=1 ;; esac ;; esac
  if [ -n "$inside" ]; then echo 'cannot copy a directory into itself' >&2; exit 22; fi
fi
d=$(dirname -- "$to"; echo .); d=${d%?}; d=${d%?}
mkdir -p -- "$d" || exit
if [ -d "$from" ] && [ -d "$to" ]; then cp -a -- "$from"/. "$to"; else cp -a -T -- "$from" "$to"; fi)sh",
                                 options);
  if (r.status != ExecutionStatus::kSuccess) {
    // cp's stderr is the sandbox's text: our secrets taken out, bounded and made valid UTF-8 like any service text.
    std::string said = impl_->stub.untrusted_text(r.stderr_text.empty() ? r.error : r.stderr_text);
    while (!said.empty() && said.back() == '\n') said.pop_back();
    const bool into_itself = r.status == ExecutionStatus::kError && r.exit_code == kIntoItself;
    throw SandboxExecutionError("copy '" + std::string(from) + "' to '" + std::string(to) + "' failed: " + said,
                                Stage::kUpload, into_itself ? ErrorKind::kInvalidArgument : detail::error_kind_of(r));
  }
}

}  // namespace code_interpreter
