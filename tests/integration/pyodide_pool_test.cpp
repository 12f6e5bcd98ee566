// PyodidePool: ready sandboxes handed out once each, refilled in the background, bounded, and stopped with the pool.
#include <catch2/catch.hpp>

#include "code_interpreter/pyodide_pool.hpp"

#include <signal.h>

#include <atomic>
#include <filesystem>
#include <iterator>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "pyodide_test_support.hpp"

namespace {

std::string value_of(ci::PyodideSandbox& sandbox, std::string_view code) {
  const auto r = sandbox.execute_code(code);
  INFO("error: " << r.error << "; stderr: " << r.stderr_text);
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  REQUIRE(r.results.size() == 1);
  return r.results.at(0).data.at("text/plain");
}

// Waits up to `limit` for `pool` to hold `n` ready sandboxes.
bool await_ready(const ci::PyodidePool& pool, std::size_t n, std::chrono::milliseconds limit = 60s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (pool.ready() != n) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

}  // namespace

TEST_CASE("acquired sandboxes run code, start fresh and share nothing", "[pool][concurrency]") {
  ci::PyodidePool pool(2);
  CHECK(pool.size() == 2);
  auto a = pool.acquire();
  auto b = pool.acquire();
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->sandbox_id() != b->sandbox_id());
  // The pool's warm-up calls leave nothing a program can see.
  CHECK(value_of(*b, "sorted(globals())") == "['__builtins__', '__name__']");
  CHECK(value_of(*a, "x = 41\nx + 1") == "42");
  const auto r = b->execute_code("x");
  CHECK(r.status == ci::ExecutionStatus::kError);
  REQUIRE(r.code_error.has_value());
  CHECK(r.code_error->name == "NameError");
  CHECK(value_of(*a, "x") == "41");
}

TEST_CASE("the pool refills to its size and keeps no more runtimes than it should", "[pool][concurrency]") {
  ci::PyodidePool pool(2);
  REQUIRE(await_ready(pool, 2));
  CHECK(pool.started() == 2);
  // Ready and idle: two runtimes, not three.
  std::this_thread::sleep_for(300ms);
  CHECK(test_support::deno_children().size() == 2);
  {
    const auto before = std::chrono::steady_clock::now();
    auto taken = pool.acquire(60s);
    CHECK(std::chrono::steady_clock::now() - before < 50ms);  // one was ready: handed out at once
    REQUIRE(taken);
    CHECK(pool.ready() == 1);
    REQUIRE(await_ready(pool, 2));
    CHECK(pool.started() == 3);
    CHECK(test_support::deno_children().size() == 3);  // two ready, one handed out
    CHECK(value_of(*taken, "1 + 1") == "2");
  }
  CHECK(test_support::deno_children().size() == 2);  // the handed-out one ended with its owner
}

TEST_CASE("concurrent acquire from more threads than the pool's size gives each its own sandbox",
          "[pool][concurrency]") {
  constexpr int kThreads = 4;
  std::set<std::string> ids;
  std::vector<std::string> answers(kThreads);
  {
    ci::PyodidePool pool(1);
    std::vector<std::unique_ptr<ci::PyodideSandbox>> got(kThreads);
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        try {
          got[i] = pool.acquire(120s);
          (void)got[i]->execute_code("n = " + std::to_string(i));
          const auto r = got[i]->execute_code("n * 10");
          if (r.status == ci::ExecutionStatus::kSuccess && r.results.size() == 1) {
            answers[i] = r.results[0].data.at("text/plain");
          }
        } catch (const std::exception& e) {
          answers[i] = std::string("threw: ") + e.what();  // fails the CHECK below with the reason
        }
      });
    }
    for (auto& t : threads) t.join();
    for (int i = 0; i < kThreads; ++i) {
      REQUIRE(got[i]);
      ids.insert(got[i]->sandbox_id().value());
      CHECK(answers[i] == std::to_string(i * 10));
    }
  }
  CHECK(ids.size() == kThreads);
  CHECK(test_support::no_deno_children());
}

TEST_CASE("destroying the pool while it starts a runtime cancels the start and leaves no process",
          "[pool][concurrency]") {
  std::chrono::steady_clock::time_point destroying;
  {
    ci::PyodidePool pool(3);
    // The first creation is under way once its runtime process exists (150 ms or more after the pool starts, more
    // in a sanitizer build): a restore takes 0.4 s and more after that.
    // One sample is both waited on and checked: a short-lived process seen at one look may be gone at the next.
    const auto spawn_limit = std::chrono::steady_clock::now() + 30s;
    auto children = test_support::deno_children();
    while (children.empty() && std::chrono::steady_clock::now() < spawn_limit) {
      std::this_thread::sleep_for(5ms);
      children = test_support::deno_children();
    }
    CHECK(pool.ready() == 0);
    REQUIRE(children.size() == 1);
    destroying = std::chrono::steady_clock::now();
  }
  // Cancelled, not waited for: what is left of the start would take longer than this.
  CHECK(std::chrono::steady_clock::now() - destroying < 250ms);
  CHECK(test_support::no_deno_children());
}

TEST_CASE("destroying a full pool ends every ready runtime", "[pool][concurrency]") {
  {
    ci::PyodidePool pool(2);
    REQUIRE(await_ready(pool, 2));
    CHECK(test_support::deno_children().size() == 2);
  }
  CHECK(test_support::no_deno_children());
}

TEST_CASE("acquire gives up at its timeout and at its stop_token, with the create errors' shape",
          "[pool][concurrency]") {
  ci::PyodidePool pool(1);
  SECTION("timeout") {
    try {
      (void)pool.acquire(1ms);
      FAIL("acquire returned a sandbox within 1 ms of the pool's start");
    } catch (const ci::SandboxStartError& e) {
      CHECK(e.stage() == ci::Stage::kStartRuntime);
      CHECK(e.kind() == ci::ErrorKind::kTimeout);
      CHECK(std::string(e.what()) == "no sandbox of the pool became ready in time");
      try {
        std::rethrow_if_nested(e);
        FAIL("no nested cause");
      } catch (const ci::TransportError& cause) {
        CHECK(cause.kind() == ci::TransportError::Kind::kTimeout);
      }
    }
  }
  SECTION("stop_token") {
    std::stop_source stop;
    std::jthread stopper([&] {
      std::this_thread::sleep_for(30ms);
      stop.request_stop();
    });
    const auto before = std::chrono::steady_clock::now();
    try {
      (void)pool.acquire(std::nullopt, stop.get_token());
      FAIL("acquire returned a sandbox within 30 ms of the pool's start");
    } catch (const ci::SandboxStartError& e) {
      CHECK(e.kind() == ci::ErrorKind::kUnknown);
      CHECK(std::string(e.what()) == "cancelled while waiting for a sandbox of the pool");
      try {
        std::rethrow_if_nested(e);
        FAIL("no nested cause");
      } catch (const ci::TransportError& cause) {
        CHECK(cause.kind() == ci::TransportError::Kind::kCancelled);
      }
    }
    CHECK(std::chrono::steady_clock::now() - before < 300ms);
  }
  // The pool goes on: the runtime it was starting is handed to the next caller.
  auto sandbox = pool.acquire(120s);
  CHECK(value_of(*sandbox, "6 * 7") == "42");
}

TEST_CASE("a failure no retry can mend stops the pool and every acquire rethrows it at once", "[pool][concurrency]") {
  ci::PyodideOptions options;
  options.runtime_dir = std::filesystem::temp_directory_path() / "ci-pool-no-such-runtime";
  ci::PyodidePool pool(1, options);
  for (int i = 0; i < 2; ++i) {
    if (i == 1) std::this_thread::sleep_for(1500ms);  // past the first retry a mendable failure would get
    const auto before = std::chrono::steady_clock::now();
    try {
      (void)pool.acquire(60s);
      FAIL("acquire returned a sandbox without a runtime");
    } catch (const ci::TemplateBuildError& e) {
      CHECK(e.stage() == ci::Stage::kTemplateBuild);
      CHECK(std::string(e.what()).find("ci-pool-no-such-runtime") != std::string::npos);
    }
    // The second acquire does not wait for an attempt: the pool stopped at the first failure.
    if (i == 1) CHECK(std::chrono::steady_clock::now() - before < 50ms);
  }
  CHECK(pool.started() == 0);
  CHECK(pool.ready() == 0);
}

namespace {

// A timeout's runtime is killed at once.
ci::PyodideOptions killing_at_timeout() {
  ci::PyodideOptions o;
  o.interrupt_grace = 0ms;
  return o;
}

}  // namespace

TEST_CASE("a sandbox of the pool replaces its runtime with a ready one of the pool", "[pool][concurrency]") {
  ci::PyodidePool pool(1, killing_at_timeout());
  auto sandbox = pool.acquire(120s);
  REQUIRE(await_ready(pool, 1));
  REQUIRE(pool.started() == 2);
  const auto layers = sandbox->confinement();
  CHECK(value_of(*sandbox, "kept = 1\nkept") == "1");
  CHECK(value_of(*sandbox, "open('/tmp/left', 'w').write('x')") == "1");
  SECTION("after a kill at its timeout") {
    test_support::force_respawn(*sandbox, 300ms);
  }
  SECTION("at restart") {
    sandbox->restart();
  }
  // The pool's ready runtime was taken (a start of its own would have left it there); a new one takes the pool half
  // a second or more to start, after a pause of 100 ms.
  CHECK(pool.ready() == 0);
  CHECK(pool.started() == 2);
  CHECK(value_of(*sandbox, "sorted(globals())") == "['__builtins__', '__name__']");
  CHECK(value_of(*sandbox, "import os\nos.path.exists('/tmp/left')") == "False");  // nor its files
  CHECK(value_of(*sandbox, "6 * 7") == "42");
  CHECK(sandbox->confinement() == layers);
  // The pool refills; the taken runtime is the sandbox's alone, the killed one is gone.
  REQUIRE(await_ready(pool, 1));
  CHECK(pool.started() == 3);
  CHECK(test_support::deno_children().size() == 2);
  CHECK(value_of(*sandbox, "7 * 6") == "42");
}

TEST_CASE("with no ready runtime in the pool, or no pool, a sandbox starts its own", "[pool][concurrency]") {
  std::unique_ptr<ci::PyodideSandbox> sandbox;
  SECTION("the pool is empty") {
    ci::PyodidePool pool(1, killing_at_timeout());
    sandbox = pool.acquire(120s);
    CHECK(value_of(*sandbox, "kept = 1\nkept") == "1");
    auto other = pool.acquire(120s);  // the one the pool had started next
    const auto started = pool.started();
    // The pool starts its next runtime 100 ms after this acquire, and a start takes far longer than that: it has
    // none ready when this runtime is replaced, about 50 ms from now.
    CHECK(pool.ready() == 0);
    test_support::force_respawn(*sandbox, 50ms);
    CHECK(value_of(*sandbox, "'kept' in globals()") == "False");
    CHECK(value_of(*other, "6 * 7") == "42");
    REQUIRE(await_ready(pool, 1));
    CHECK(pool.started() == started + 1);  // the pool's own refill; the sandbox's runtime is not the pool's
    CHECK(test_support::deno_children().size() == 3);
  }
  SECTION("the pool is gone") {
    {
      ci::PyodidePool pool(1, killing_at_timeout());
      sandbox = pool.acquire(120s);
      REQUIRE(await_ready(pool, 1));
    }
    CHECK(test_support::deno_children().size() == 1);
    CHECK(value_of(*sandbox, "kept = 1\nkept") == "1");
    test_support::force_respawn(*sandbox, 300ms);
    CHECK(value_of(*sandbox, "'kept' in globals()") == "False");
    CHECK(test_support::deno_children().size() == 1);
  }
  sandbox.reset();
  CHECK(test_support::no_deno_children());
}

namespace {

// SIGKILL to a runtime from outside, as the kernel's OOM killer would send it; returns once it has ended (a zombie
// until the library reaps it) with all its threads, the last of which closes its pipes.
void kill_from_outside(pid_t pid) {
  REQUIRE(::kill(pid, SIGKILL) == 0);
  const std::string proc = "/proc/" + std::to_string(pid);
  const auto limit = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    std::ifstream stat(proc + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    std::error_code ec;
    const auto threads = std::distance(std::filesystem::directory_iterator(proc + "/task", ec),
                                       std::filesystem::directory_iterator());
    if (close != std::string::npos && line.compare(close + 2, 1, "Z") == 0 && threads == 1) return;
    REQUIRE(std::chrono::steady_clock::now() < limit);
    std::this_thread::sleep_for(5ms);
  }
}

}  // namespace

TEST_CASE("acquire does not hand out a ready runtime that died while it waited", "[pool][concurrency]") {
  ci::PyodidePool pool(1);
  REQUIRE(await_ready(pool, 1));
  const auto children = test_support::deno_children();
  REQUIRE(children.size() == 1);
  kill_from_outside(children[0]);
  auto sandbox = pool.acquire(120s);
  CHECK(pool.started() == 2);  // the dead one was replaced, and the new one handed out
  CHECK_FALSE(std::filesystem::exists("/proc/" + std::to_string(children[0])));
  CHECK(value_of(*sandbox, "6 * 7") == "42");
}

TEST_CASE("a ready runtime of the pool that died while it waited is not taken", "[pool][concurrency]") {
  ci::PyodidePool pool(1, killing_at_timeout());
  REQUIRE(await_ready(pool, 1));
  const auto taken = test_support::deno_children();
  REQUIRE(taken.size() == 1);
  auto sandbox = pool.acquire(120s);
  REQUIRE(await_ready(pool, 1));
  auto children = test_support::deno_children();
  REQUIRE(children.size() == 2);
  const pid_t waiting = children[0] == taken[0] ? children[1] : children[0];
  kill_from_outside(waiting);
  CHECK(value_of(*sandbox, "kept = 1\nkept") == "1");
  test_support::force_respawn(*sandbox, 300ms);
  CHECK(pool.ready() == 0);  // the dead one left the pool, and its process was reaped
  CHECK_FALSE(std::filesystem::exists("/proc/" + std::to_string(waiting)));
  // The sandbox started its own: the next call runs in a fresh interpreter.
  CHECK(value_of(*sandbox, "sorted(globals())") == "['__builtins__', '__name__']");
  REQUIRE(await_ready(pool, 1));
  CHECK(test_support::deno_children().size() == 2);
}

TEST_CASE("a pool of size 0 is refused", "[pool]") {
  try {
    ci::PyodidePool pool(0);
    FAIL("a pool of size 0 was made");
  } catch (const ci::SandboxStartError& e) {
    CHECK(e.stage() == ci::Stage::kConfigure);
    CHECK(e.kind() == ci::ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()) == "a PyodidePool needs a size of at least 1");
  }
}
