// AgentCore's files: the file tools, paths relative to the session's working directory (docs/protocols/bedrock.md
// "File tools").
#include "core/base64.hpp"
#include "core/file_guards.hpp"
#include "core/python_call.hpp"
#include "core/temporary_file.hpp"
#include "core/utf8.hpp"
#include "bedrock/bedrock_impl.hpp"

namespace code_interpreter {

using bedrock::Invocation;
using nlohmann::json;
using std::chrono::milliseconds;

Invocation BedrockAgentCoreSandbox::Impl::file_tool(http::Operation op, std::string_view tool, json arguments,
                                                    std::stop_token cancel, Timeout timeout,
                                                    std::optional<std::uint64_t> file_cap) {
  const milliseconds t = timeout ? (timeout->count() > 0 ? *timeout : milliseconds(0)) : stub.options.request_timeout;
  return invoke(op, tool, std::move(arguments), t, std::move(cancel), nullptr, nullptr, file_cap);
}

void BedrockAgentCoreSandbox::Impl::make_directory(std::string_view path, std::stop_token cancel, bool* session_gone) {
  const auto inv = file_tool(http::Operation::kAgentCoreMakeDir, "executeCommand",
                             {{"command", "mkdir -p -- " + bedrock::shell_quote(path)}}, cancel);
  if (inv.succeeded()) return;
  throw_tool_error(inv, Stage::kUpload, "make_dir", session_gone);
}

void BedrockAgentCoreSandbox::Impl::write(std::string_view path, std::string_view data, std::stop_token cancel,
                                          bool* session_gone) {
  // writeFiles may not create parent directories (docs/protocols/bedrock.md "File tools").
  if (const auto slash = path.rfind('/'); slash != std::string_view::npos && slash != 0)
    make_directory(path.substr(0, slash), cancel, session_gone);
  json block = {{"path", path}};
  // Text stays text; anything else is a blob, base64-encoded exactly once (docs/protocols/bedrock.md "File tools").
  if (detail::is_valid_utf8(data) && data.find('\0') == std::string_view::npos) block["text"] = data;
  else block["blob"] = detail::base64_encode(data);
  const auto inv = file_tool(http::Operation::kAgentCoreWriteFiles, "writeFiles", {{"content", json::array({block})}}, cancel);
  if (inv.succeeded()) return;
  throw_tool_error(inv, Stage::kUpload, "write_file", session_gone);
}

std::string BedrockAgentCoreSandbox::Impl::read(std::string_view path, std::uint64_t cap, std::stop_token cancel,
                                                Timeout timeout) {
  const auto inv = file_tool(http::Operation::kAgentCoreReadFiles, "readFiles", {{"paths", json::array({path})}}, cancel,
                             timeout, cap);
  if (inv.over_cap) throw detail::over_cap_error(path, cap);
  if (!inv.succeeded()) throw_tool_error(inv, Stage::kDownload, "read_file");
  for (const auto& block : inv.content) {
    if (!block.is_object() || bedrock::string_member(block, "type", "") != "resource" || !block.contains("resource")) continue;
    const auto& resource = block["resource"];
    if (resource.contains("text") && resource["text"].is_string()) return resource["text"].get<std::string>();
    if (resource.contains("blob") && resource["blob"].is_string()) {
      auto bytes = detail::base64_decode(resource["blob"].get<std::string>());
      if (!bytes) throw SandboxExecutionError("read_file: the file's blob is not base64", Stage::kDownload, ErrorKind::kInternal);
      if (bytes->size() > cap) throw detail::over_cap_error(path, cap);
      return std::move(*bytes);
    }
  }
  throw SandboxExecutionError("read_file: the answer carried no file content", Stage::kDownload, ErrorKind::kInternal);
}

std::optional<std::string> BedrockAgentCoreSandbox::Impl::download(std::string_view path, std::uint64_t cap,
                                                                   std::stop_token cancel, Timeout timeout,
                                                                   std::string_view op) {
  try {
    return read(path, cap, std::move(cancel), timeout);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const SandboxExecutionError& e) {
    if (e.kind() == ErrorKind::kQuotaExceeded) detail::warn_over_cap(op, path, cap);
    return std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
}

// ---- BedrockAgentCoreSandbox: files ----

void BedrockAgentCoreSandbox::do_write_file(std::string_view path, std::string_view data) {
  const auto call = impl_->calls.begin();
  impl_->write(path, data, call->token());
}

std::string BedrockAgentCoreSandbox::do_read_file(std::string_view path, std::optional<std::uint64_t> max_bytes) {
  const auto call = impl_->calls.begin();
  return impl_->read(path, max_bytes.value_or(impl_->stub.options.max_download_bytes), call->token());
}

std::vector<FileInfo> BedrockAgentCoreSandbox::do_list_files(std::string_view dir) {
  const auto call = impl_->calls.begin();
  const auto inv = impl_->file_tool(http::Operation::kAgentCoreListFiles, "listFiles", {{"directoryPath", dir}}, call->token());
  if (!inv.succeeded()) impl_->throw_tool_error(inv, Stage::kDownload, "list_files");
  std::vector<FileInfo> files;
  for (const auto& block : inv.content) {
    if (!block.is_object() || bedrock::string_member(block, "type", "") != "resource_link") continue;
    FileInfo info;
    info.name = bedrock::string_member(block, "name", "");
    std::string uri = bedrock::string_member(block, "uri", "");
    if (uri.rfind("file:///", 0) == 0) uri = uri.substr(8);
    else if (uri.rfind("file://", 0) == 0) uri = uri.substr(7);
    info.path = uri;
    info.is_directory = bedrock::string_member(block, "description", "") == "Directory" ||
                        bedrock::string_member(block, "mimeType", "") == "inode/directory";
    if (const auto size = block.find("size"); size != block.end() && size->is_number_unsigned()) info.size = size->get<std::uint64_t>();
    files.push_back(std::move(info));
  }
  return files;
}

void BedrockAgentCoreSandbox::do_remove_file(std::string_view path) {
  const auto call = impl_->calls.begin();
  const auto inv = impl_->file_tool(http::Operation::kAgentCoreRemoveFiles, "removeFiles", {{"paths", json::array({path})}},
                                    call->token());
  if (!inv.succeeded()) impl_->throw_tool_error(inv, Stage::kUpload, "remove_file");
}

void BedrockAgentCoreSandbox::do_make_dir(std::string_view path) {
  const auto call = impl_->calls.begin();
  impl_->make_directory(path, call->token());
}

std::optional<std::string> BedrockAgentCoreSandbox::do_download_file(std::string_view path, Timeout timeout,
                                                                     std::optional<std::uint64_t> max_bytes) {
  const auto call = impl_->calls.begin();
  return impl_->download(path, max_bytes.value_or(impl_->stub.options.max_download_bytes), call->token(), timeout,
                         "download_file");
}

bool BedrockAgentCoreSandbox::do_download_file_to(std::string_view path, const std::filesystem::path& destination,
                                                  Timeout timeout, std::optional<std::uint64_t> max_bytes) {
  // The service returns a file inside one JSON answer, so it is read whole (within the cap), then written beside
  // the destination and renamed into place.
  std::optional<std::string> bytes;
  {
    const auto call = impl_->calls.begin();
    bytes = impl_->download(path, max_bytes.value_or(impl_->stub.options.max_download_bytes), call->token(), timeout,
                            "download_file_to");
  }
  if (!bytes) return false;
  return detail::write_via_temporary(destination, [&](std::ofstream& out) {
    out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
    return static_cast<bool>(out);
  });
}

}  // namespace code_interpreter

// ---- exists, get_info, copy, move: AgentCore has no file tool for them (docs/protocols/bedrock.md "Tools"), so
// they run as Python in the session, through executeCode (detail::run_python_for_json), where the file tools'
// relative paths resolve the same way (against the session's working directory). Python sessions only.

namespace code_interpreter {

namespace {

using nlohmann::json;

void require_python_session(const CodeInterpreterSandbox& sb, std::string_view what, Stage stage) {
  if (sb.language() != Language::kPython)
    throw SandboxExecutionError(std::string(what) + " runs as Python in the session; this sandbox runs " +
                                    std::string(to_string(sb.language())),
                                stage, ErrorKind::kUnsupported);
}

// The body's answer: {"missing": true}, {"error": "Name: text"} or what the operation returns.
json file_call(CodeInterpreterSandbox& sb, const std::string& what, const json& args, std::string_view op_body,
               Stage stage) {
  require_python_session(sb, what, stage);
  const std::string body = std::string("    import os, shutil, stat\n"
                                       "    try:\n") +
                           std::string(op_body) +
                           "    except FileNotFoundError:\n"
                           "        text = '{\"missing\": true}'\n"
                           "    except NotADirectoryError:\n"
                           "        text = '{\"missing\": true}'\n"
                           "    except Exception as e:\n"
                           "        text = json.dumps({'error': type(e).__name__ + ': ' + str(e)})\n";
  auto answer = detail::run_python_for_json(sb, what, args, body, stage);
  if (const auto it = answer.find("missing"); it != answer.end() && *it == true)
    throw SandboxExecutionError(what + ": no such file or directory", stage, ErrorKind::kNotFound);
  if (const auto it = answer.find("error"); it != answer.end()) {
    const std::string said = it->is_string() ? it->get<std::string>() : std::string("an error");
    throw SandboxExecutionError(what + " failed: " + said, stage,
                                said.rfind("PermissionError", 0) == 0 ? ErrorKind::kPermissionDenied
                                                                      : ErrorKind::kInvalidArgument);
  }
  return answer;
}

}  // namespace

bool BedrockAgentCoreSandbox::do_exists(std::string_view path) {
  const auto answer = file_call(*this, "exists '" + std::string(path) + "'", {{"path", path}},
                                "        try:\n"
                                "            os.lstat(args['path'])\n"
                                "            found = True\n"
                                "        except (FileNotFoundError, NotADirectoryError):\n"
                                "            found = False\n"
                                "        text = json.dumps({'exists': found})\n",
                                Stage::kDownload);
  const auto it = answer.find("exists");
  if (it == answer.end() || !it->is_boolean())
    throw SandboxExecutionError("exists: the framed answer is not the JSON object asked for", Stage::kDownload,
                                ErrorKind::kInternal);
  return it->get<bool>();
}

FileInfo BedrockAgentCoreSandbox::do_get_info(std::string_view path) {
  const auto answer = file_call(
      *this, "get_info '" + std::string(path) + "'", {{"path", path}},
      "        p = args['path']\n"
      "        st = os.lstat(p)\n"
      "        kind = ('symlink' if stat.S_ISLNK(st.st_mode) else 'directory' if stat.S_ISDIR(st.st_mode)\n"
      "                else 'file' if stat.S_ISREG(st.st_mode) else 'other')\n"
      "        text = json.dumps({'type': kind, 'size': 0 if kind == 'directory' else st.st_size,\n"
      "                           'mtime_ms': st.st_mtime_ns // 1000000, 'mode': stat.S_IMODE(st.st_mode)})\n",
      Stage::kDownload);
  auto info = detail::file_info_from_stat(path, answer);
  if (!info)
    throw SandboxExecutionError("get_info: the framed answer is not the JSON object asked for", Stage::kDownload,
                                ErrorKind::kInternal);
  return std::move(*info);
}

// The first lines of copy and move: the source must exist, the destination's parents are made.
constexpr std::string_view kTransferPrologue =
    "        src, dst = args['from'], args['to']\n"
    "        os.lstat(src)\n"
    "        parent = os.path.dirname(dst)\n"
    "        if parent:\n"
    "            os.makedirs(parent, exist_ok=True)\n";

void BedrockAgentCoreSandbox::do_copy(std::string_view from, std::string_view to) {
  (void)file_call(*this, "copy '" + std::string(from) + "'", {{"from", from}, {"to", to}},
                  std::string(kTransferPrologue) +
                      "        if os.path.isdir(src) and not os.path.islink(src):\n"
                      "            shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)\n"
                      "        else:\n"
                      "            shutil.copy2(src, dst, follow_symlinks=False)\n"
                      "        text = '{}'\n",
                  Stage::kUpload);
}

void BedrockAgentCoreSandbox::do_move(std::string_view from, std::string_view to) {
  (void)file_call(*this, "move '" + std::string(from) + "'", {{"from", from}, {"to", to}},
                  std::string(kTransferPrologue) +
                      "        os.replace(src, dst)\n"
                      "        text = '{}'\n",
                  Stage::kUpload);
}

}  // namespace code_interpreter
