#include "pyodide/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <system_error>

#include "code_interpreter/logging.hpp"
#include "pyodide/confinement.hpp"

namespace code_interpreter::detail {

namespace {

// Forks on behalf of callers from one thread that lives as long as the process. PR_SET_PDEATHSIG fires when the
// *thread* that forked the child exits, so forking from a short-lived caller thread would kill the child early.
class Spawner {
 public:
  static Spawner& instance() {
    static Spawner* spawner = new Spawner();  // never destroyed: its thread must outlive every child
    return *spawner;
  }

  pid_t run(const std::function<pid_t()>& job) {
    std::unique_lock lock(mu_);
    const std::uint64_t ticket = ++submitted_;
    jobs_.push_back({ticket, &job});
    cv_.notify_all();
    cv_.wait(lock, [&] { return done_ >= ticket; });
    return results_[ticket % kSlots];
  }

 private:
  static constexpr std::size_t kSlots = 1024;
  struct Job {
    std::uint64_t ticket;
    const std::function<pid_t()>* fn;
  };

  Spawner() {
    std::thread([this] { loop(); }).detach();
  }

  void loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return !jobs_.empty(); });
      Job job = jobs_.front();
      jobs_.erase(jobs_.begin());
      lock.unlock();
      const pid_t pid = (*job.fn)();
      lock.lock();
      results_[job.ticket % kSlots] = pid;
      done_ = job.ticket;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Job> jobs_;
  std::uint64_t submitted_ = 0;
  std::uint64_t done_ = 0;
  pid_t results_[kSlots] = {};
};

// After fork: tells the parent (through the stderr pipe, seen in HostProcess::death_description) which confinement step failed.
// Only write(2), no formatting library.
[[noreturn]] void confinement_failed(int step, int error) noexcept {
  char msg[] = "code_interpreter: kernel confinement step 0 failed with errno 000\n";
  char* step_digit = msg + sizeof("code_interpreter: kernel confinement step ") - 1;
  *step_digit = static_cast<char>('0' + step % 10);
  char* e = msg + sizeof msg - 2;  // the newline
  for (int i = 0; i < 3; ++i, error /= 10) *--e = static_cast<char>('0' + error % 10);
  [[maybe_unused]] const auto n = ::write(2, msg, sizeof msg - 1);
  ::_exit(126);
}

void close_fd(int& fd) noexcept {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

}  // namespace

ChildProcess::ChildProcess(const std::filesystem::path& executable, const std::vector<std::string>& args,
                           const std::vector<std::string>& env, const Confinement* confinement) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  if (::pipe2(out, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(in[0]), ::close(in[1]);
    throw std::system_error(e, std::generic_category(), "pipe");
  }
  if (::pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(in[0]), ::close(in[1]), ::close(out[0]), ::close(out[1]);
    throw std::system_error(e, std::generic_category(), "pipe");
  }

  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls are allowed.
  const std::string exe = executable.string();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int fork_errno = 0;
  const std::function<pid_t()> job = [&]() -> pid_t {
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) fork_errno = errno;  // errno belongs to the spawner thread
    if (pid != 0) return pid;
    // In the child.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the host died before prctl took effect
    ::setpgid(0, 0);  // a terminal's Ctrl-C goes to the host's process group; the host decides what it ends
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    // The host's working directory is nobody's business in the runtime (Deno.cwd() needs no permission).
    if (::chdir("/") != 0) ::_exit(127);
    // Confinement needs its Landlock ruleset descriptor, so it comes before the descriptors are closed; the
    // seccomp filter allows close_range and execve.
    if (confinement != nullptr) {
      int step = 0;
      if (const int e = confinement->apply_in_child(&step); e != 0) confinement_failed(step, e);
    }
    ::syscall(SYS_close_range, 3u, ~0u, 0u);  // nothing else of the host's leaks into the runtime
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);  // seen by the parent as end of output before the ready frame
  };
  const pid_t pid = Spawner::instance().run(job);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (pid < 0) {
    ::close(in[1]), ::close(out[0]), ::close(err[0]);
    throw std::system_error(fork_errno, std::generic_category(), "fork");
  }
  pid_ = pid;
  stdin_fd_ = in[1];
  stdout_fd_ = out[0];
  stderr_thread_ = std::thread([this, fd = err[0]] { drain_stderr(fd); });
}

ChildProcess::~ChildProcess() {
  kill();
  close_stdin();
  wait();
  if (stderr_thread_.joinable()) stderr_thread_.join();
  close_fd(stdout_fd_);
}

void ChildProcess::drain_stderr(int fd) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::string_view chunk(buf, static_cast<std::size_t>(n));
    logger()->debug("pyodide runtime {} stderr: {}", pid_, chunk);
    std::lock_guard lock(mu_);
    stderr_tail_.append(chunk);
    if (stderr_tail_.size() > 4096) stderr_tail_.erase(0, stderr_tail_.size() - 4096);
  }
  ::close(fd);
}

void ChildProcess::kill() noexcept {
  std::lock_guard lock(mu_);
  // The pid is ours until we reap it, so it cannot have been reused by another process.
  if (pid_ > 0 && !reaped_) ::kill(pid_, SIGKILL);
}

void ChildProcess::close_stdin() noexcept {
  std::lock_guard lock(mu_);
  close_fd(stdin_fd_);
}

int ChildProcess::wait() noexcept {
  {
    std::lock_guard lock(mu_);
    if (pid_ <= 0 || reaped_) return status_;
  }
  // Wait for the exit without reaping (WNOWAIT), so kill() stays safe meanwhile; then reap under the lock.
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  std::lock_guard lock(mu_);
  if (!reaped_) {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    status_ = status;
  }
  return status_;
}

std::string ChildProcess::stderr_tail() const {
  std::lock_guard lock(mu_);
  return stderr_tail_;
}

}  // namespace code_interpreter::detail
