#!/usr/bin/env python3
"""code-interpreter packages against a local HTTP server standing in for Pyodide's release location, with the
wheels and lock the tests build (tests/CMakeLists.txt): exact output, files in place, exit statuses.

Usage: packages_test.py CODE_INTERPRETER PACKAGE_DIR PACKAGE_LOCK
"""
import functools
import hashlib
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading

CLI, SOURCE, LOCK = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []


def check(name, got, expected):
    if got != expected:
        failures.append(name)
        print(f"FAIL {name}:\n  expected {expected!r}\n  got      {got!r}")
    else:
        print(f"ok   {name}")


def run(*args):
    p = subprocess.run([CLI, "packages", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                       timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    return p.returncode, p.stdout, p.stderr


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=SOURCE))
threading.Thread(target=server.serve_forever, daemon=True).start()
base = f"http://127.0.0.1:{server.server_address[1]}/"
W = "-0.1.0-py3-none-any.whl"

with tempfile.TemporaryDirectory() as tmp:
    empty = os.path.join(tmp, "packages")
    check("list: nothing fetched yet", run("list", "--dir", empty, "--lock", LOCK, "ci-app"),
          (1, f"ci-base\t0.1.0\tmissing\tci_base{W}\nci-app\t0.1.0\tmissing\tci_app{W}\n", ""))
    check("fetch: the package and its dependency", run("fetch", "--dir", empty, "--lock", LOCK, "--base-url", base,
                                                       "CI_App"),
          (0, f"ci-base\t0.1.0\tpresent\tci_base{W}\nci-app\t0.1.0\tpresent\tci_app{W}\n", ""))
    for name in ("ci_base", "ci_app"):
        with open(os.path.join(SOURCE, name + W), "rb") as a, open(os.path.join(empty, name + W), "rb") as b:
            check(f"fetch: {name} byte-exact", hashlib.sha256(b.read()).hexdigest(),
                  hashlib.sha256(a.read()).hexdigest())
    check("list: now present", run("list", "--dir", empty, "--lock", LOCK, "ci-app"),
          (0, f"ci-base\t0.1.0\tpresent\tci_base{W}\nci-app\t0.1.0\tpresent\tci_app{W}\n", ""))
    check("fetch: a file the server lacks", run("fetch", "--dir", empty, "--lock", LOCK, "--base-url", base, "ci-absent"),
          (1, "", f"code-interpreter: fetching 'ci_absent{W}' from {base}: HTTP 404\n"))
    check("fetch: a file whose SHA-256 is not the lock's",
          run("fetch", "--dir", empty, "--lock", LOCK, "--base-url", base, "ci-tampered"),
          (1, "", f"code-interpreter: fetching 'ci_tampered{W}' from {base}: the file does not match the SHA-256 "
                  "the lock gives; it was deleted\n"))
    check("fetch: nothing of a refused file is left", sorted(os.listdir(empty)), sorted(["ci_base" + W, "ci_app" + W]))
    check("fetch: an unknown name", run("fetch", "--dir", empty, "--lock", LOCK, "--base-url", base, "nope")[0], 64)
    shutil.copy(os.path.join(SOURCE, "ci_tampered" + W), os.path.join(empty, "ci_tampered" + W))
    check("list: a file that does not match", run("list", "--dir", empty, "--lock", LOCK, "ci-tampered"),
          (1, f"ci-tampered\t0.1.0\tmismatch\tci_tampered{W}\n", ""))
    check("list: an unreadable lock", run("list", "--dir", empty, "--lock", os.path.join(tmp, "none.json")),
          (1, "", f"code-interpreter: cannot read the package lock '{os.path.join(tmp, 'none.json')}'\n"))

server.shutdown()
if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
