// One runtime process of PyodideHost (host.hpp): its private directory, its pipes, and the reading of its frames
// (docs/architecture.md "One Deno process per sandbox", "Process lifetime").
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <system_error>

#include "code_interpreter/logging.hpp"
#include "core/utf8.hpp"
#include "pyodide/host.hpp"

namespace code_interpreter::detail {

namespace fs = std::filesystem;
using Clock = HostClock;

namespace {

constexpr auto kMemoryCheckInterval = std::chrono::milliseconds(100);

std::string random_token() {
  std::random_device rd;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (int i = 0; i < 32; ++i) token += kHex[rd() & 15];
  return token;
}

}  // namespace

void sweep_stale_runtime_dirs(const fs::path& base) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind(kRuntimeDirPrefix, 0) != 0) continue;
    struct stat st {};
    if (::lstat(entry.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid()) continue;
    std::ifstream owner(entry.path() / "owner");
    long pid = 0;
    if (!(owner >> pid) || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code remove_ec;
    fs::remove_all(entry.path(), remove_ec);
    if (!remove_ec) logger()->debug("removed the stale runtime directory '{}' of process {}", entry.path().string(), pid);
  }
}

RuntimeDir::RuntimeDir(const fs::path& base) {
  std::string pattern = (base / (std::string(kRuntimeDirPrefix) + "XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp under '" + base.string() + "'");
  }
  path = pattern;
  std::ofstream(path / "owner") << ::getpid() << "\n";
  std::error_code ec;
  fs::create_directory(deno_dir(), ec);
  if (ec) {
    fs::remove_all(path, ec);
    throw std::system_error(ec, "mkdir '" + deno_dir().string() + "'");
  }
}

RuntimeDir::~RuntimeDir() {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) logger()->warn("could not remove the runtime directory '{}': {}", path.string(), ec.message());
}

HostProcess::HostProcess(const Runtime& rt, const std::vector<std::string>& args,
                         std::unique_ptr<RuntimeDir> private_dir, const std::vector<std::string>& env,
                         const Confinement* confinement, std::size_t max_frame, std::uint64_t memory_limit)
    : dir(std::move(private_dir)),
      child(rt.deno, args, env, confinement),
      decoder(max_frame),
      token(random_token()),
      watchdog(child.pid(), memory_limit, kMemoryCheckInterval, [this] { child.kill(); }) {
  const int flags = ::fcntl(child.stdin_fd(), F_GETFL);
  ::fcntl(child.stdin_fd(), F_SETFL, flags | O_NONBLOCK);
}

FrameWait HostProcess::next_frame(int wake_fd, std::optional<Clock::time_point> deadline, Frame& out,
                                  std::string& why) {
  for (;;) {
    try {
      if (auto f = decoder.next()) {
        if (field_string(f->header, "k") != token) {
          why = "a frame without this runtime's token (forged output)";
          return FrameWait::kMalformed;
        }
        out = std::move(*f);
        return FrameWait::kFrame;
      }
    } catch (const std::exception& e) {
      why = e.what();
      return FrameWait::kMalformed;
    }
    if (eof) {
      if (decoder.buffered() > 0) why = "the runtime's output ended inside a frame";
      return FrameWait::kEof;
    }
    int wait_ms = -1;
    if (deadline) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now()).count();
      if (left <= 0) return FrameWait::kDeadline;
      wait_ms = static_cast<int>(std::min<long long>(left, 60'000));
    }
    pollfd fds[2] = {{child.stdout_fd(), POLLIN, 0}, {wake_fd, POLLIN, 0}};
    const int n = ::poll(fds, 2, wait_ms);
    if (n < 0 && errno != EINTR) {
      why = std::string("poll failed: ") + std::strerror(errno);
      return FrameWait::kMalformed;
    }
    if (n <= 0) continue;
    if (fds[1].revents & POLLIN) {
      std::uint64_t v;
      while (::read(wake_fd, &v, sizeof v) > 0) {
      }
      return FrameWait::kWoken;
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[1 << 16];
      const ssize_t got = ::read(child.stdout_fd(), buf, sizeof buf);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) {
        eof = true;
      } else {
        decoder.push(std::string_view(buf, static_cast<std::size_t>(got)));
      }
    }
  }
}

std::string HostProcess::death_description() {
  child.kill();
  const int status = child.wait();
  std::string text = "the Pyodide runtime exited";
  if (WIFSIGNALED(status)) {
    text += " (killed by signal " + std::to_string(WTERMSIG(status)) + ")";
  } else if (WIFEXITED(status)) {
    text += " (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
  }
  // The end of what it wrote to stderr (a fatal error's message, say): at most the last 600 bytes, from a line
  // start where there is one, repaired to valid UTF-8.
  std::string tail = child.stderr_tail();
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  if (tail.size() > 600) {
    tail.erase(0, tail.size() - 600);
    if (const auto nl = tail.find('\n'); nl != std::string::npos) tail.erase(0, nl + 1);
  }
  if (!tail.empty()) text += ": " + utf8_replacing(tail);
  return text;
}

bool HostProcess::died_of_memory() {
  if (watchdog.exceeded()) return true;
  const auto tail = child.stderr_tail();
  for (const char* sign : {"out of memory", "Out of memory", "memory allocation of", "allocation failed",
                           "Allocation failed"}) {
    if (tail.find(sign) != std::string::npos) return true;
  }
  return false;
}

}  // namespace code_interpreter::detail
