// Hostile trees against the runtime's stat, copy and move requests (python_worker.mjs "the in-memory filesystem"):
// a program in the sandbox builds the paths (symlinks, loops, deep or large trees), and the host then asks to copy,
// move or stat through them. Each ends in an exact, contained outcome: a refusal that makes nothing, or the work
// done; never an endless recursion, a hang, a blown stack or a lost runtime (docs/errors.md "Filesystem, interrupt,
// restart and variables").
#include <signal.h>

#include <chrono>
#include <thread>
#include <string>
#include <utility>
#include <vector>

#include "pyodide_test_support.hpp"
#include "security_support.hpp"

using security::fresh;
using security::run;
using security::value_of;

namespace {

// The call throws SandboxExecutionError at `stage` with `kind` and exactly `message`.
template <typename F>
void check_refused(F&& call, ci::Stage stage, ci::ErrorKind kind, const std::string& message) {
  try {
    call();
    FAIL("no SandboxExecutionError");
  } catch (const ci::SandboxExecutionError& e) {
    CHECK(e.stage() == stage);
    CHECK(e.kind() == kind);
    CHECK(std::string(e.what()) == message);
  }
}

// The value of `expression` evaluated in the sandbox.
std::string eval(ci::PyodideSandbox& sb, const std::string& expression) {
  const auto r = run(sb, "import os\n" + expression);
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  return value_of(r);
}

}  // namespace

TEST_CASE("copy and move of a directory into itself through .., ./ or a trailing slash are refused and make nothing",
          "[fs]") {
  auto sb = fresh();
  REQUIRE(run(*sb, "import os\nos.makedirs('/files/a/b')\nopen('/files/a/b/f.txt', 'w').write('x')").status ==
          ci::ExecutionStatus::kSuccess);
  const std::vector<std::pair<std::string, std::string>> into_itself = {
      {"/files/a/../a", "/files/a/sub"},
      {"/files/a", "/files/a/../a/sub"},
      {"/files/./a/", "/files/a/./b/../new/deeper"},
      {"/files/a", "/files/./a//b/c"},
      {"/files/a/b/..", "/files/a/b/x"},
  };
  for (const auto& paths : into_itself) {
    // Named references, not structured bindings: clang 14 cannot capture a binding in a lambda.
    const std::string& from = paths.first;
    const std::string& to = paths.second;
    INFO(from << " -> " << to);
    check_refused([&] { sb->copy(from, to); }, ci::Stage::kUpload, ci::ErrorKind::kInvalidArgument,
                  "copy '" + from + "': invalid argument (EINVAL)");
    check_refused([&] { sb->move(from, to); }, ci::Stage::kUpload, ci::ErrorKind::kInvalidArgument,
                  "move '" + from + "': invalid argument (EINVAL)");
  }
  // Onto itself: a copy is refused, a move is the rename's no-op.
  check_refused([&] { sb->copy("/files/a/b/../../a", "/files/a"); }, ci::Stage::kUpload,
                ci::ErrorKind::kInvalidArgument, "copy '/files/a/b/../../a': invalid argument (EINVAL)");
  sb->move("/files/a/../a", "/files/a");
  // Relative paths resolve against the working directory the program chose.
  REQUIRE(run(*sb, "import os\nos.chdir('/files')").status == ci::ExecutionStatus::kSuccess);
  check_refused([&] { sb->copy("a", "./a/./x"); }, ci::Stage::kUpload, ci::ErrorKind::kInvalidArgument,
                "copy 'a': invalid argument (EINVAL)");
  check_refused([&] { sb->move("./a", "a/x"); }, ci::Stage::kUpload, ci::ErrorKind::kInvalidArgument,
                "move './a': invalid argument (EINVAL)");
  // Nothing was made, nothing was lost, and the runtime is the same one.
  CHECK(eval(*sb, "sorted(os.listdir('/files/a')), sorted(os.listdir('/files/a/b'))") == "(['b'], ['f.txt'])");
  // A copy beside the source still works.
  sb->copy("/files/a/../a", "/files/a2");
  CHECK(sb->read_file("/files/a2/b/f.txt") == "x");
  security::require_alive(*sb);
}

TEST_CASE("a destination that reaches the source through a symlink is refused for copy and move", "[fs]") {
  auto sb = fresh();
  REQUIRE(run(*sb, "import os\nos.makedirs('/files/a/b')\nos.symlink('/files/a', '/files/link')\n"
                   "os.symlink('/files/a/b', '/files/a/b/self')")
              .status == ci::ExecutionStatus::kSuccess);
  check_refused([&] { sb->copy("/files/a", "/files/link/sub"); }, ci::Stage::kUpload, ci::ErrorKind::kInvalidArgument,
                "copy '/files/a': invalid argument (EINVAL)");
  check_refused([&] { sb->move("/files/a", "/files/link/b/new"); }, ci::Stage::kUpload,
                ci::ErrorKind::kInvalidArgument, "move '/files/a': invalid argument (EINVAL)");
  check_refused([&] { sb->copy("/files/a/b", "/files/a/b/self/x"); }, ci::Stage::kUpload,
                ci::ErrorKind::kInvalidArgument, "copy '/files/a/b': invalid argument (EINVAL)");
  // A link is copied as a link, never followed: the copy of a tree holding a link to itself ends.
  sb->copy("/files/a", "/files/c");
  CHECK(sb->get_info("/files/c/b/self").type == std::optional(ci::FileType::kSymlink));
  CHECK(eval(*sb, "os.readlink('/files/c/b/self'), sorted(os.listdir('/files/c/b'))") == "('/files/a/b', ['self'])");
  sb->copy("/files/link", "/files/link2");
  CHECK(sb->get_info("/files/link2").type == std::optional(ci::FileType::kSymlink));
  CHECK(eval(*sb, "sorted(os.listdir('/files/a')), sorted(os.listdir('/files/a/b'))") == "(['b'], ['self'])");
  security::require_alive(*sb);
}

TEST_CASE("a copy that merges into a destination holding a symlink back into the source is refused, never endless",
          "[fs]") {
  auto sb = fresh();
  // /files/b/s leads to /files/a/s/t: merging a/s into b/s through the link would write a/s into a/s/t/t/... .
  // The source holds only the directory, so nothing but the directory link can stop the copy.
  REQUIRE(run(*sb, "import os\nos.makedirs('/files/a/s/t')\nos.makedirs('/files/b')\n"
                   "os.symlink('/files/a/s/t', '/files/b/s')\nkept = 1")
              .status == ci::ExecutionStatus::kSuccess);
  const auto began = std::chrono::steady_clock::now();
  check_refused([&] { sb->copy("/files/a", "/files/b"); }, ci::Stage::kUpload, ci::ErrorKind::kInvalidArgument,
                "copy '/files/a': already exists (EEXIST)");
  CHECK(std::chrono::steady_clock::now() - began < std::chrono::seconds(10));
  // The source is as it was, the link was not written through, and the runtime and its state are the same.
  CHECK(eval(*sb, "sorted(os.listdir('/files/a/s/t')), os.path.islink('/files/b/s'), kept") == "([], True, 1)");
  // A file link in the destination is not written through either.
  REQUIRE(run(*sb, "import os\nos.remove('/files/b/s')\nopen('/files/a/f.txt', 'w').write('x')\n"
                   "os.symlink('/files/a/f.txt', '/files/b/f.txt')")
              .status == ci::ExecutionStatus::kSuccess);
  check_refused([&] { sb->copy("/files/a/f.txt", "/files/b/f.txt"); }, ci::Stage::kUpload,
                ci::ErrorKind::kInvalidArgument, "copy '/files/a/f.txt': already exists (EEXIST)");
  CHECK(eval(*sb, "open('/files/a/f.txt').read(), os.path.islink('/files/b/f.txt')") == "('x', True)");
  security::require_alive(*sb);
}

TEST_CASE("a symlink loop makes stat, copy and move fail with ELOOP at once, never hang or read as absent", "[fs]") {
  auto sb = fresh();
  REQUIRE(run(*sb, "import os\nos.makedirs('/files/a')\nos.symlink('/files/l2', '/files/l1')\n"
                   "os.symlink('/files/l1', '/files/l2')")
              .status == ci::ExecutionStatus::kSuccess);
  const auto began = std::chrono::steady_clock::now();
  const std::string loop = "too many levels of symbolic links (ELOOP)";
  check_refused([&] { (void)sb->exists("/files/l1/x"); }, ci::Stage::kDownload, ci::ErrorKind::kInvalidArgument,
                "exists '/files/l1/x': " + loop);
  check_refused([&] { (void)sb->get_info("/files/l2/x"); }, ci::Stage::kDownload, ci::ErrorKind::kInvalidArgument,
                "get_info '/files/l2/x': " + loop);
  check_refused([&] { sb->copy("/files/l1/x", "/files/y"); }, ci::Stage::kUpload, ci::ErrorKind::kInvalidArgument,
                "copy '/files/l1/x': " + loop);
  check_refused([&] { sb->copy("/files/a", "/files/l1/x"); }, ci::Stage::kUpload, ci::ErrorKind::kInvalidArgument,
                "copy '/files/a': " + loop);
  check_refused([&] { sb->move("/files/a", "/files/l2/x/y"); }, ci::Stage::kUpload, ci::ErrorKind::kInvalidArgument,
                "move '/files/a': " + loop);
  CHECK(std::chrono::steady_clock::now() - began < std::chrono::seconds(10));
  // The links themselves are there, and copy as links.
  CHECK(sb->exists("/files/l1"));
  CHECK(sb->get_info("/files/l1").type == std::optional(ci::FileType::kSymlink));
  sb->copy("/files/l1", "/files/l3");
  CHECK(eval(*sb, "os.readlink('/files/l3')") == "'/files/l2'");
  CHECK(eval(*sb, "sorted(os.listdir('/files'))") == "['a', 'l1', 'l2', 'l3']");
  security::require_alive(*sb);
}

TEST_CASE("a tree 400 directories deep is copied and moved without overflowing the runtime's stack", "[fs]") {
  auto sb = fresh();
  REQUIRE(run(*sb, "import os\np = '/files/deep'\nos.mkdir(p)\nfor i in range(400):\n    p += '/d'\n    os.mkdir(p)\n"
                   "open(p + '/leaf.txt', 'w').write('bottom')")
              .status == ci::ExecutionStatus::kSuccess);
  sb->copy("/files/deep", "/files/copy");
  sb->move("/files/copy", "/files/moved");
  CHECK(eval(*sb, "open('/files/moved' + '/d' * 400 + '/leaf.txt').read(), os.path.exists('/files/copy')") ==
        "('bottom', False)");
  CHECK(eval(*sb, "open('/files/deep' + '/d' * 400 + '/leaf.txt').read()") == "'bottom'");
  security::require_alive(*sb);
}

TEST_CASE("a copy that takes the runtime past its memory cap throws quota_exceeded: the runtime killed or the state kept",
          "[fs][memory]") {
  ci::PyodideOptions options;
  options.memory_limit_bytes = std::size_t{512} << 20;
  auto sb = fresh(options);
  // 240 MiB of files in a wide tree: the copy needs as much again, past the cap with the runtime's own memory.
  REQUIRE(run(*sb, "import os\nblock = b'\\x03' * (10 << 20)\nfor i in range(24):\n    os.makedirs('/files/big/%d' % i)\n"
                   "    open('/files/big/%d/f.bin' % i, 'wb').write(block)\ndel block\nkept = 'state'")
              .status == ci::ExecutionStatus::kSuccess);
  const auto began = std::chrono::steady_clock::now();
  std::string refusal;
  try {
    sb->copy("/files/big", "/files/big2");
    FAIL("the copy went through");
  } catch (const ci::SandboxExecutionError& e) {
    CHECK(e.stage() == ci::Stage::kUpload);
    CHECK(e.kind() == ci::ErrorKind::kQuotaExceeded);
    refusal = e.what();
  }
  CHECK(std::chrono::steady_clock::now() - began < std::chrono::seconds(60));
  // The data limit and the watchdog both count the copy's memory; which one stops it first is a race the design
  // allows either way (docs/backends/pyodide.md, "Process limits"), each with its own exact outcome.
  if (refusal == "copy '/files/big': not enough memory under the runtime's memory limit (ENOMEM)") {
    // Refused while the runtime lives: its state is kept, every file the copy finished is whole, none is left
    // under a temporary name. The files the copy finished stay in memory, so the watchdog may still find the
    // runtime past the cap afterwards and replace it: the next call then says the state was lost.
    const auto r = run(*sb, "import os\nkept, os.path.exists('/files/big'), sorted({os.path.getsize(os.path.join(d, "
                            "f)) for d, _, fs in os.walk('/files/big2') for f in fs} - {10 << 20}), [n for d, _, fs "
                            "in os.walk('/files') for n in fs if 'copying' in n]");
    if (!r.state_lost) {
      CHECK(value_of(r) == "('state', True, [], [])");
    } else {
      CHECK(r.status == ci::ExecutionStatus::kError);
    }
  } else {
    CHECK(refusal == "the runtime exceeded its memory limit of 512 MiB; a fresh runtime was started and its files "
                     "and state are lost");
    CHECK(eval(*sb, "'kept' in globals(), os.path.exists('/files/big')") == "(False, False)");
  }
  security::require_alive(*sb);
}

TEST_CASE("a file copy refused under the memory cap is quota_exceeded, keeps the runtime and leaves no partial file",
          "[fs][memory]") {
  ci::PyodideOptions options;
  options.memory_limit_bytes = std::size_t{400} << 20;
  auto sb = fresh(options);
  REQUIRE(run(*sb, "import os\nopen('/files/big', 'wb').write(b'\\x05' * (48 << 20))\nkept = 'state'").status ==
          ci::ExecutionStatus::kSuccess);
  // Copies of 48 MiB until one is refused: by the allocation (ENOMEM, runtime kept) or, if the watchdog sees the
  // process past the cap first, by the kill (runtime replaced). Either is kQuotaExceeded; neither leaves a part.
  std::string refusal;
  int copied = 0;
  for (; copied < 12 && refusal.empty(); ++copied) {
    try {
      sb->copy("/files/big", "/files/big" + std::to_string(copied));
    } catch (const ci::SandboxExecutionError& e) {
      CHECK(e.stage() == ci::Stage::kUpload);
      CHECK(e.kind() == ci::ErrorKind::kQuotaExceeded);
      refusal = e.what();
    }
  }
  REQUIRE_FALSE(refusal.empty());
  const std::string last = "/files/big" + std::to_string(copied - 1);
  if (refusal == "copy '/files/big': not enough memory under the runtime's memory limit (ENOMEM)") {
    CHECK(eval(*sb, "kept, os.path.exists('" + last + "'), os.path.getsize('/files/big')") ==
          "('state', False, 50331648)");
    // A file already at the destination is kept whole when the copy over it is refused; one that goes through
    // replaces it whole.
    sb->write_file("/files/old.txt", "old");
    try {
      sb->copy("/files/big", "/files/old.txt");
      CHECK(eval(*sb, "os.path.getsize('/files/old.txt')") == "50331648");
    } catch (const ci::SandboxExecutionError& e) {
      CHECK(e.kind() == ci::ErrorKind::kQuotaExceeded);
      if (std::string(e.what()).find("(ENOMEM)") != std::string::npos) CHECK(sb->read_file("/files/old.txt") == "old");
    }
    CHECK(eval(*sb, "sorted(n for n in os.listdir('/files') if 'copying' in n)") == "[]");
  } else {
    CHECK(refusal == "the runtime exceeded its memory limit of 400 MiB; a fresh runtime was started and its files and "
                     "state are lost");
  }
  security::require_alive(*sb);
}

TEST_CASE("exists on a runtime killed from outside throws unavailable, never reads the lost file as absent", "[fs]") {
  auto sb = fresh();
  sb->write_file("/files/kept.txt", "x");
  REQUIRE(sb->exists("/files/kept.txt"));
  REQUIRE(::kill(security::runtime_pid(), SIGKILL) == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  try {
    const bool answer = sb->exists("/files/kept.txt");
    FAIL("exists answered " << answer);
  } catch (const ci::SandboxExecutionError& e) {
    CHECK(e.stage() == ci::Stage::kDownload);
    CHECK(e.kind() == ci::ErrorKind::kUnavailable);
  }
  // The next call has a fresh runtime, which truly has no such file.
  CHECK_FALSE(sb->exists("/files/kept.txt"));
  security::require_alive(*sb);
}
