// PyodideSandbox's file operations, and the attachments of a run: `fs` requests of at most one 8 MiB chunk each
// (docs/architecture.md "Library to host", "Size limits"), every answer read as hostile (docs/errors.md "File
// guards"), errors thrown by src/pyodide/outcome.hpp.
#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "code_interpreter/logging.hpp"
#include "core/file_guards.hpp"
#include "core/nested.hpp"
#include "core/temporary_file.hpp"
#include "core/untrusted.hpp"
#include "pyodide/outcome.hpp"
#include "pyodide/sandbox_impl.hpp"

namespace code_interpreter {

namespace fs = std::filesystem;
using Clock = detail::HostClock;
using detail::FileError;
using detail::Frame;
using json = nlohmann::json;

namespace {

// Reads `path` chunk by chunk, handing each to `sink`, and stops once more than `cap` bytes came (kind
// kQuotaExceeded). The answer's "size" is never trusted: the bytes are counted, each request asks for no more
// than one past the cap, and the file ends at the first chunk shorter than asked. A chunk longer than asked
// breaks the protocol: the runtime is replaced.
template <typename Sink>
std::optional<FileError> read_chunks(detail::PyodideHost& host, std::string_view path,
                                     std::optional<Clock::time_point> deadline, std::string_view op,
                                     std::uint64_t cap, Sink sink) {
  detail::ByteCap count(cap);
  for (;;) {
    const std::uint64_t asked = std::min<std::uint64_t>(detail::kFileChunk, count.room_plus_one());
    auto answer = host.file_request(
        {{"op", "read"}, {"path", path}, {"offset", count.received()}, {"length", asked}}, {}, deadline);
    if (auto* e = std::get_if<FileError>(&answer)) return *e;
    auto& f = std::get<Frame>(answer);
    if (auto e = detail::fs_answer_error(f, "read", path)) return e;
    if (f.body.size() > asked) {
      host.respawn();
      return FileError{ErrorKind::kInternal,
                       "the Pyodide runtime answered " + std::to_string(f.body.size()) + " bytes where at most " +
                           std::to_string(asked) + " were asked; the runtime was restarted",
                       true};
    }
    if (!count.add(f.body.size())) return FileError{ErrorKind::kQuotaExceeded, detail::over_cap_message(op, path, cap)};
    sink(f.body);
    if (f.body.size() < asked) return std::nullopt;
  }
}

// One request whose answer carries nothing but success: a FileError for a failed one.
std::optional<FileError> simple_request(detail::PyodideHost& host, const char* op, std::string_view path) {
  auto answer = host.file_request({{"op", op}, {"path", path}}, {},
                                  detail::deadline_from(std::nullopt, detail::kDefaultFileTimeout));
  if (auto* e = std::get_if<FileError>(&answer)) return *e;
  return detail::fs_answer_error(std::get<Frame>(answer), op, path);
}

}  // namespace

std::optional<FileError> PyodideSandbox::Impl::write_bytes(std::string_view path, std::string_view data,
                                                           std::optional<Clock::time_point> deadline,
                                                           const std::stop_token& cancel) {
  std::size_t off = 0;
  do {
    const auto n = std::min(detail::kFileChunk, data.size() - off);
    auto answer = host.file_request({{"op", "write"}, {"path", path}, {"append", off > 0}}, data.substr(off, n),
                                    deadline, cancel);
    if (auto* e = std::get_if<FileError>(&answer)) return *e;
    if (auto e = detail::fs_answer_error(std::get<Frame>(answer), "write", path)) return e;
    off += n;
  } while (off < data.size());
  return std::nullopt;
}

std::optional<FileError> PyodideSandbox::Impl::write_from_file(std::string_view path, const fs::path& source,
                                                               std::optional<Clock::time_point> deadline,
                                                               const std::stop_token& cancel) {
  std::ifstream in(source, std::ios::binary);
  if (!in) return FileError{ErrorKind::kInvalidArgument, "cannot read '" + source.string() + "'"};
  std::string chunk(detail::kFileChunk, '\0');
  bool first = true;
  for (;;) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (in.bad()) return FileError{ErrorKind::kInternal, "error reading '" + source.string() + "'"};
    if (got > 0 || first) {
      auto answer = host.file_request({{"op", "write"}, {"path", path}, {"append", !first}},
                                      std::string_view(chunk.data(), got), deadline, cancel);
      if (auto* e = std::get_if<FileError>(&answer)) return *e;
      if (auto e = detail::fs_answer_error(std::get<Frame>(answer), "write", path)) return e;
    }
    first = false;
    if (got < chunk.size()) return std::nullopt;
  }
}

void PyodideSandbox::do_write_file(std::string_view path, std::string_view data) {
  const auto call = impl_->begin_call();
  if (auto e = impl_->write_bytes(path, data, detail::deadline_from(std::nullopt, detail::kDefaultFileTimeout))) {
    detail::throw_file_error(*e, Stage::kUpload);
  }
}

std::string PyodideSandbox::do_read_file(std::string_view path, std::optional<std::uint64_t> max_bytes) {
  const auto call = impl_->begin_call();
  std::string data;
  if (auto e = read_chunks(impl_->host, path, detail::deadline_from(std::nullopt, detail::kDefaultFileTimeout),
                           "read_file", max_bytes.value_or(impl_->options.max_download_bytes),
                           [&](const std::string& chunk) { data += chunk; })) {
    detail::throw_file_error(*e, Stage::kDownload);
  }
  return data;
}

std::vector<FileInfo> PyodideSandbox::do_list_files(std::string_view dir) {
  const auto call = impl_->begin_call();
  auto answer = impl_->host.file_request({{"op", "list"}, {"path", dir}}, {},
                                         detail::deadline_from(std::nullopt, detail::kDefaultFileTimeout));
  if (auto* e = std::get_if<FileError>(&answer)) detail::throw_file_error(*e, Stage::kDownload);
  const auto& f = std::get<Frame>(answer);
  if (auto e = detail::fs_answer_error(f, "list", dir)) detail::throw_file_error(*e, Stage::kDownload);
  std::vector<FileInfo> files;
  try {
    for (const auto& entry : f.header.at("entries")) {
      FileInfo info;
      info.name = entry.at("name").get<std::string>();
      info.path = entry.at("path").get<std::string>();
      info.is_directory = entry.at("dir").get<bool>();
      info.size = entry.at("size").get<std::uint64_t>();
      files.push_back(std::move(info));
    }
  } catch (const json::exception& e) {
    impl_->host.respawn();  // the runtime broke the protocol: it is not trusted further
    detail::throw_nested(SandboxExecutionError("malformed listing from the Pyodide runtime; the runtime was restarted",
                                               Stage::kDownload, ErrorKind::kInternal),
                         TransportError(e.what(), TransportError::Kind::kProtocol, 0, std::nullopt, true));
  }
  std::sort(files.begin(), files.end(), [](const FileInfo& a, const FileInfo& b) { return a.name < b.name; });
  return files;
}

void PyodideSandbox::do_remove_file(std::string_view path) {
  const auto call = impl_->begin_call();
  if (auto e = simple_request(impl_->host, "remove", path)) detail::throw_file_error(*e, Stage::kUpload);
}

void PyodideSandbox::do_make_dir(std::string_view path) {
  const auto call = impl_->begin_call();
  if (auto e = simple_request(impl_->host, "mkdir", path)) detail::throw_file_error(*e, Stage::kUpload);
}

std::optional<std::string> PyodideSandbox::do_download_file(std::string_view path, Timeout timeout,
                                                            std::optional<std::uint64_t> max_bytes) {
  const auto call = impl_->begin_call();
  std::string data;
  if (auto e = read_chunks(impl_->host, path, detail::deadline_from(timeout, detail::kDefaultFileTimeout),
                           "download_file", max_bytes.value_or(impl_->options.max_download_bytes),
                           [&](const std::string& chunk) { data += chunk; })) {
    if (e->kind == ErrorKind::kQuotaExceeded) logger()->warn("sandbox {}: {}", impl_->host.id(), e->message);
    else logger()->debug("sandbox {}: download_file failed: {}", impl_->host.id(), e->message);
    return std::nullopt;
  }
  return data;
}

bool PyodideSandbox::do_download_file_to(std::string_view path, const fs::path& destination, Timeout timeout,
                                         std::optional<std::uint64_t> max_bytes) {
  const auto call = impl_->begin_call();
  // Streamed into a temporary file beside the destination, renamed into place only when complete. Nothing is read
  // when that file cannot be made.
  bool opened = false;
  const bool written = detail::write_via_temporary(destination, [&](std::ofstream& out) {
    opened = true;
    auto e = read_chunks(impl_->host, path, detail::deadline_from(timeout, detail::kDefaultFileTimeout),
                         "download_file_to", max_bytes.value_or(impl_->options.max_download_bytes),
                         [&](const std::string& chunk) {
                           out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
                         });
    if (e && e->kind == ErrorKind::kQuotaExceeded) logger()->warn("sandbox {}: {}", impl_->host.id(), e->message);
    return !e && static_cast<bool>(out);
  });
  if (!opened) {
    logger()->debug("sandbox {}: cannot write a temporary file beside '{}'", impl_->host.id(), destination.string());
  }
  return written;
}

}  // namespace code_interpreter

// ---- filesystem: exists, get_info, copy, move ----

namespace code_interpreter {

namespace {

// copy or move: a request with a source and a destination whose answer carries nothing but success.
std::optional<FileError> two_path_request(detail::PyodideHost& host, const char* op, std::string_view from,
                                          std::string_view to) {
  auto answer = host.file_request({{"op", op}, {"path", from}, {"to", to}}, {},
                                  detail::deadline_from(std::nullopt, detail::kDefaultFileTimeout));
  if (auto* e = std::get_if<FileError>(&answer)) return *e;
  return detail::fs_answer_error(std::get<Frame>(answer), op, from);
}

}  // namespace

bool PyodideSandbox::do_exists(std::string_view path) {
  const auto call = impl_->begin_call();
  auto answer = impl_->host.file_request({{"op", "stat"}, {"path", path}}, {},
                                         detail::deadline_from(std::nullopt, detail::kDefaultFileTimeout));
  if (auto* e = std::get_if<FileError>(&answer)) detail::throw_file_error(*e, Stage::kDownload);
  const auto& f = std::get<Frame>(answer);
  if (const auto ok = f.header.find("ok"); ok != f.header.end() && *ok == true) return true;
  // ENOENT, or ENOTDIR (a component on the way is a file): the runtime said the path is not there.
  const auto code = detail::string_member(f.header, "code");
  if (code == "ENOENT" || code == "ENOTDIR") return false;
  detail::throw_file_error(*detail::fs_answer_error(f, "exists", path), Stage::kDownload);
}

FileInfo PyodideSandbox::do_get_info(std::string_view path) {
  const auto call = impl_->begin_call();
  auto answer = impl_->host.file_request({{"op", "stat"}, {"path", path}}, {},
                                         detail::deadline_from(std::nullopt, detail::kDefaultFileTimeout));
  if (auto* e = std::get_if<FileError>(&answer)) detail::throw_file_error(*e, Stage::kDownload);
  const auto& f = std::get<Frame>(answer);
  if (auto e = detail::fs_answer_error(f, "get_info", path)) detail::throw_file_error(*e, Stage::kDownload);
  // The host rebuilt "info" from known fields only (host.mjs); its absence breaks the protocol.
  const auto it = f.header.find("info");
  auto info = it == f.header.end() ? std::nullopt : detail::file_info_from_stat(path, *it);
  if (!info) {
    impl_->host.respawn();
    throw SandboxExecutionError("malformed get_info answer from the Pyodide runtime; the runtime was restarted",
                                Stage::kDownload, ErrorKind::kInternal);
  }
  return std::move(*info);
}

void PyodideSandbox::do_copy(std::string_view from, std::string_view to) {
  const auto call = impl_->begin_call();
  if (auto e = two_path_request(impl_->host, "copy", from, to)) detail::throw_file_error(*e, Stage::kUpload);
}

void PyodideSandbox::do_move(std::string_view from, std::string_view to) {
  const auto call = impl_->begin_call();
  if (auto e = two_path_request(impl_->host, "move", from, to)) detail::throw_file_error(*e, Stage::kUpload);
}

}  // namespace code_interpreter
