// write_all (pipe_write.hpp): a whole write to a pipe that never lets SIGPIPE reach the host program.
#include "core/pipe_write.hpp"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace code_interpreter::detail {

bool write_all(int fd, std::string_view data, std::optional<std::chrono::steady_clock::time_point> deadline) {
  sigset_t pipe_set, old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  bool ok = true;
  bool got_epipe = false;
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        int wait_ms = 100;
        if (deadline) {
          const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now()).count();
          if (left <= 0) {
            ok = false;
            break;
          }
          wait_ms = static_cast<int>(std::min<long long>(left, 100));
        }
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, wait_ms);
        continue;
      }
      got_epipe = errno == EPIPE;
      ok = false;
      break;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  if (got_epipe && !sigismember(&old_set, SIGPIPE)) {
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) > 0) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  return ok;
}

}  // namespace code_interpreter::detail
