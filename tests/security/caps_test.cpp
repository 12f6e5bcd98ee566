// CPU after a call returns, disk fill, state across respawns and sandboxes, Deno refusals as Python exceptions, the
// names list_files returns, and the kernel confinement of the runtime process as /proc shows it.
#include <filesystem>
#include <regex>

#include "pyodide_test_support.hpp"
#include "security_support.hpp"

using security::blocked;
using security::fresh;
using security::kPrelude;
using security::run;
namespace fs = std::filesystem;

namespace {

ci::PyodideOptions quick_kill() {
  ci::PyodideOptions o;
  o.interrupt_grace = 200ms;
  return o;
}

ci::ExecuteOptions long_budget() {
  ci::ExecuteOptions o;
  o.timeout = std::chrono::seconds(120);  // the first call after a respawn waits for the new runtime
  return o;
}

}  // namespace

TEST_CASE("an idle sandbox uses under 1% of a core over 3 s between calls", "[cpu]") {
  auto sb = fresh();
  REQUIRE(test_support::await_runtime_settled(security::runtime_pid()));
  REQUIRE(run(*sb, "x = sum(range(1000))").status == ci::ExecutionStatus::kSuccess);
  std::this_thread::sleep_for(200ms);
  const double used = security::cpu_percent_over(security::runtime_pid(), 3s);
  CHECK(used < 1.0);
}

TEST_CASE("no CPU is used after a call returns: Workers, timers and pending tasks stay still", "[cpu]") {
  auto sb = fresh();
  REQUIRE(test_support::await_runtime_settled(security::runtime_pid()));
  const auto r = run(*sb, kPrelude + R"PY(
g = await find_global()
busy = 'for(;;){}'
await attempt('Worker(data:)', lambda: need(g).Worker.new('data:text/javascript,' + busy, _js_obj({'type': 'module'})) and 'started')
spin = _proxy(lambda *a: [i for i in range(200000)] and None)
await attempt('setInterval', lambda: need(g).setInterval(spin, 1) and 'scheduled')
async def forever():
    while True:
        sum(range(100000))
        await _aio.sleep(0)
task = _aio.ensure_future(forever())
await _aio.sleep(0.05)
)PY");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"Worker(data:)", "setInterval"}));
  std::this_thread::sleep_for(200ms);
  const double used = security::cpu_percent_over(security::runtime_pid(), 3s);
  CHECK(used < 1.0);
}

TEST_CASE("Web storage and the Cache API cannot fill the runtime's private directory", "[disk]") {
  auto sb = fresh();
  REQUIRE(run(*sb, "1").status == ci::ExecutionStatus::kSuccess);
  const auto pid = security::runtime_pid();
  const fs::path deno_dir = security::runtime_env(pid, "DENO_DIR");
  REQUIRE_FALSE(deno_dir.empty());
  const auto before = security::tree_bytes(deno_dir);
  ci::ExecuteOptions o;
  o.env = {{"D", deno_dir.string()}};
  o.timeout = std::chrono::seconds(60);
  const auto r = run(*sb, kPrelude + "import os\ndeno_dir = os.environ['D']\n" + R"PY(
g = await find_global()
chunk = 'x' * (1 << 20)
# Each fill counts what it stored before a quota (if any) stopped it: any of it is "reached".
def fill_storage():
    stored = 0
    try:
        for i in range(48):
            need(g).localStorage.setItem('k%d' % i, chunk)
            stored += 1
    finally:
        return ('%d MiB stored' % stored) if stored else None
async def fill_cache():
    stored = 0
    try:
        c = await need(g).caches.open('fill')
        for i in range(48):
            await c.put('http://x/%d' % i, need(g).Response.new(chunk))
            stored += 1
    finally:
        return ('%d MiB stored' % stored) if stored else None
await attempt('localStorage', fill_storage)
await attempt('caches', fill_cache, 50)
await attempt('Deno.writeFileSync', lambda: need(g).Deno.writeFileSync(deno_dir + '/fill.bin', _to_js(b'x' * (16 << 20))) or 'written')
)PY",
                     o);
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"localStorage", "caches", "Deno.writeFileSync"}));
  const auto after = security::tree_bytes(deno_dir);
  CHECK(after <= before + (4u << 20));
}

TEST_CASE("a value stored by one runtime is not read by the runtime respawned after a hard kill", "[state]") {
  auto sb = fresh(quick_kill());
  const auto put = run(*sb, kPrelude + R"PY(
g = await find_global()
try:
    need(g).localStorage.setItem('left', 'behind')
except BaseException:
    pass
try:
    c = await need(g).caches.open('left')
    await c.put('http://x/left', need(g).Response.new('behind'))
except BaseException:
    pass
open('/tmp/left.txt', 'w').write('behind')
left = 'behind'
)PY");
  REQUIRE(put.status == ci::ExecutionStatus::kSuccess);
  test_support::force_respawn(*sb, 500ms);  // the next call gets a respawned runtime
  const auto r = sb->execute_code(kPrelude + R"PY(
import os
g = await find_global()
async def cached():
    c = await need(g).caches.open('left')
    m = await c.match('http://x/left')
    return m and await m.text()
await attempt('localStorage', lambda: need(g).localStorage.getItem('left'))
await attempt('caches', cached)
await attempt('file', lambda: os.path.exists('/tmp/left.txt') and 'present')
await attempt('variable', lambda: 'left' in globals() and 'present')
)PY",
                                  long_budget());
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"localStorage", "caches", "file", "variable"}));
}

TEST_CASE("a value stored by one sandbox is not read by a fresh one", "[state]") {
  auto one = fresh();
  REQUIRE(run(*one, kPrelude + R"PY(
g = await find_global()
try:
    need(g).localStorage.setItem('shared', 'across')
except BaseException:
    pass
)PY").status == ci::ExecutionStatus::kSuccess);
  one->write_file("/files/one.txt", "1");
  auto two = fresh();
  const auto r = run(*two, kPrelude + R"PY(
import os
g = await find_global()
await attempt('localStorage', lambda: need(g).localStorage.getItem('shared'))
await attempt('file', lambda: os.path.exists('/files/one.txt') and 'present')
)PY");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK(r.stdout_text == blocked({"localStorage", "file"}));
}

TEST_CASE("each runtime, respawns included, gets a new private directory, and the old one is removed", "[host]") {
  auto sb = fresh(quick_kill());
  REQUIRE(run(*sb, "1").status == ci::ExecutionStatus::kSuccess);
  const fs::path first = security::runtime_env(security::runtime_pid(), "DENO_DIR");
  REQUIRE_FALSE(first.empty());
  REQUIRE(fs::exists(first));
  test_support::force_respawn(*sb, 500ms);  // the next call gets a respawned runtime
  REQUIRE(sb->execute_code("1", long_budget()).status == ci::ExecutionStatus::kSuccess);
  const fs::path second = security::runtime_env(security::runtime_pid(), "DENO_DIR");
  REQUIRE_FALSE(second.empty());
  CHECK(second != first);
  CHECK_FALSE(fs::exists(first));
  sb->terminate();
  CHECK_FALSE(fs::exists(second));
}

TEST_CASE("os.getuid() never kills the runtime: it raises OSError or returns a number, and the state is kept",
          "[refusals]") {
  auto sb = fresh();
  REQUIRE(run(*sb, "kept = 'state'").status == ci::ExecutionStatus::kSuccess);
  const auto r = run(*sb, R"PY(
import os
try:
    v = os.getuid()
    print('ok' if isinstance(v, int) else 'odd')
except OSError:
    print('raised OSError')
)PY");
  CHECK(r.status == ci::ExecutionStatus::kSuccess);
  CHECK((r.stdout_text == "ok\n" || r.stdout_text == "raised OSError\n"));
  CHECK(r.stderr_text.find("Fatal") == std::string::npos);
  CHECK(r.stdout_text.find("Fatal") == std::string::npos);
  CHECK_FALSE(r.state_lost);
  CHECK(security::value_of(run(*sb, "kept")) == "'state'");
}

TEST_CASE("no standard-library call that reaches a Deno permission check kills the runtime", "[refusals]") {
  auto sb = fresh();
  REQUIRE(run(*sb, "kept = 'state'").status == ci::ExecutionStatus::kSuccess);
  // Each call prints "name: ok" or "name: raised OSError"; anything else is printed as "other" and fails the test.
  const auto r = run(*sb, R"PY(
import os, sys
calls = [
    ('os.getuid', lambda: os.getuid()), ('os.geteuid', lambda: os.geteuid()), ('os.getgid', lambda: os.getgid()),
    ('os.getegid', lambda: os.getegid()), ('os.getgroups', lambda: os.getgroups()),
    ('os.getlogin', lambda: os.getlogin()), ('os.getpid', lambda: os.getpid()), ('os.getppid', lambda: os.getppid()),
    ('os.uname', lambda: os.uname()), ('os.cpu_count', lambda: os.cpu_count()),
    ('os.getloadavg', lambda: os.getloadavg()), ('os.times', lambda: os.times()),
    ('os.statvfs', lambda: os.statvfs('/')), ('os.path.expanduser', lambda: os.path.expanduser('~')),
    ('platform.platform', lambda: __import__('platform').platform()),
    ('platform.node', lambda: __import__('platform').node()),
    ('platform.uname', lambda: __import__('platform').uname()),
    ('socket.gethostname', lambda: __import__('socket').gethostname()),
    ('time.tzname', lambda: __import__('time').tzname), ('time.localtime', lambda: __import__('time').localtime()),
    ('time.tzset', lambda: __import__('time').tzset()),
    ('locale.getlocale', lambda: __import__('locale').getlocale()),
    ('locale.setlocale', lambda: __import__('locale').setlocale(__import__('locale').LC_ALL, '')),
    ('resource.getrlimit', lambda: __import__('resource').getrlimit(__import__('resource').RLIMIT_NOFILE)),
    ('resource.getrusage', lambda: __import__('resource').getrusage(__import__('resource').RUSAGE_SELF)),
    ('pwd.getpwuid', lambda: __import__('pwd').getpwuid(0)), ('grp.getgrgid', lambda: __import__('grp').getgrgid(0)),
    ('getpass.getuser', lambda: __import__('getpass').getuser()),
    ('tempfile.gettempdir', lambda: __import__('tempfile').gettempdir()),
    ('shutil.disk_usage', lambda: __import__('shutil').disk_usage('/')),
    ('multiprocessing.cpu_count', lambda: __import__('multiprocessing').cpu_count()),
    ('os.sched_getaffinity', lambda: os.sched_getaffinity(0)),
    ('os.getpriority', lambda: os.getpriority(os.PRIO_PROCESS, 0)),
    ('os.urandom', lambda: os.urandom(8)),
    ('uuid.uuid1', lambda: __import__('uuid').uuid1()), ('uuid.getnode', lambda: __import__('uuid').getnode()),
    ('sysconfig', lambda: __import__('sysconfig').get_config_vars() and None),
    ('os.environ', lambda: dict(os.environ)),
]
for name, fn in calls:
    try:
        fn()
        print(name + ': ok')
    except (OSError, KeyError, ImportError, AttributeError, NotImplementedError) as e:
        # KeyError (pwd/grp without an entry), ImportError/AttributeError (module or function absent in wasm) and
        # NotImplementedError are Python's own answers: the runtime is fine.
        print(name + ': raised ' + ('OSError' if isinstance(e, OSError) else 'refusal'))
    except BaseException as e:
        print(name + ': other ' + type(e).__name__)
print('end')
)PY");
  REQUIRE(r.status == ci::ExecutionStatus::kSuccess);
  CHECK_FALSE(r.state_lost);
  CHECK(r.stdout_text.find(": other") == std::string::npos);
  CHECK(r.stdout_text.find("Fatal") == std::string::npos);
  CHECK(r.stderr_text.find("Fatal") == std::string::npos);
  const std::regex line("[a-z_.0-9]+: (ok|raised (OSError|refusal))");
  std::istringstream lines(r.stdout_text);
  std::string l;
  int count = 0;
  while (std::getline(lines, l) && l != "end") {
    INFO(l);
    CHECK(std::regex_match(l, line));
    ++count;
  }
  CHECK(count == 38);
  CHECK(security::value_of(run(*sb, "kept")) == "'state'");
}

TEST_CASE("list_files drops names with a slash, a backslash, '.', '..', NUL or nothing, even when the runtime "
          "lies",
          "[guards]") {
  auto sb = fresh();
  sb->write_file("/files/good.txt", "good");
  const auto hook = run(*sb, kPrelude + R"PY(
FS = _pjs.FS
real_stat = FS.stat
fake = ['.', '..', 'good.txt', '../../../root/.bashrc', 'a/b', 'back\\slash', '', 'nul\x00byte', '..', '.']
def readdir(path, *a):
    return _to_js(fake)
def stat(path, *a):
    try:
        return real_stat(path)
    except BaseException:
        return real_stat('/files/good.txt')
try:
    FS.readdir = _proxy(readdir)
    FS.stat = _proxy(stat)
except BaseException:
    pass
None
)PY");
  REQUIRE(hook.status == ci::ExecutionStatus::kSuccess);
  const auto listing = sb->list_files("/files");
  REQUIRE(listing.size() == 1);
  CHECK(listing[0].name == "good.txt");
  CHECK(listing[0].path == "/files/good.txt");
  CHECK(listing[0].size == 4u);
}

TEST_CASE("the runtime process runs with no_new_privs, and with a seccomp filter unless the mode turns it off",
          "[host]") {
  auto sb = fresh();
  REQUIRE(run(*sb, "1").status == ci::ExecutionStatus::kSuccess);
  const auto pid = security::runtime_pid();
  CHECK(security::proc_status(pid, "NoNewPrivs") == "1");
  const std::string expected_seccomp = security::confinement_mode() == "realm-only" ? "0" : "2";
  CHECK(security::proc_status(pid, "Seccomp") == expected_seccomp);
}

TEST_CASE("the runtime process has no core dumps and bounded file sizes and descriptors", "[host]") {
  auto sb = fresh();
  REQUIRE(run(*sb, "1").status == ci::ExecutionStatus::kSuccess);
  const std::string limits = test_support::read_text("/proc/" + std::to_string(security::runtime_pid()) + "/limits");
  const auto soft = [&](const std::string& name) {
    const auto at = limits.find(name);
    REQUIRE(at != std::string::npos);
    std::istringstream row(limits.substr(at + name.size()));
    std::string value;
    row >> value;
    return value;
  };
  CHECK(soft("Max core file size") == "0");
  CHECK(soft("Max file size") != "unlimited");
  CHECK(soft("Max open files") != "unlimited");
}
