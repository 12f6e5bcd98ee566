#!/usr/bin/env python3
"""code-interpreter repl through a pseudo-terminal, on the Pyodide backend, as a person types at it.

Usage: repl_test.py CODE_INTERPRETER EXAMPLES_JSON

Each step writes what a person would type (Enter is a carriage return, Ctrl-C the byte 0x03), reads until the next
prompt, and checks the output between the echoed input and that prompt exactly. Every wait is bounded.
"""
import os
import pty
import re
import select
import subprocess
import sys
import tempfile
import time

CLI, EXAMPLES = sys.argv[1], sys.argv[2]
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]")
failures = []


class Repl:
    def __init__(self, state_dir):
        env = {"PATH": "/usr/bin:/bin", "HOME": state_dir, "XDG_STATE_HOME": state_dir, "TERM": "dumb"}
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(CLI, [CLI, "repl", "--examples", EXAMPLES], env)
        self.buffer = b""

    def read_until(self, marker, timeout):
        """Everything up to and including `marker`; raises after `timeout` seconds without it."""
        deadline = time.monotonic() + timeout
        while marker not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {marker!r} within {timeout} s; got {self.buffer!r}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise EOFError(f"the REPL ended while waiting for {marker!r}; got {self.buffer!r}")
                self.buffer += chunk
        end = self.buffer.index(marker) + len(marker)
        out, self.buffer = self.buffer[:end], self.buffer[end:]
        return out

    def send(self, data):
        time.sleep(0.1)  # a person's pace: libedit has the terminal by then (see enter)
        os.write(self.fd, data)

    def enter(self, line, prompt=b">>> ", timeout=30):
        """Types `line` and Enter; returns the lines printed after the echo, before `prompt`."""
        self.send(line.encode() + b"\r")
        raw = self.read_until(prompt, timeout)
        if os.environ.get("REPL_TEST_DEBUG"): print(repr(raw))
        lines = lines_of(raw)
        # Typed before libedit has the terminal, a line is echoed twice (by the terminal, then by libedit), as a
        # person's type-ahead would be: the output starts after the last echo.
        echo = next((i for i in reversed(range(len(lines))) if lines[i].endswith(line)), None)
        if echo is None:
            raise AssertionError(f"the input {line!r} was not echoed: {lines!r}")
        return lines[echo + 1:]


def lines_of(raw):
    text = ANSI.sub(b"", raw).decode("utf-8", "replace").replace("\r\n", "\n")
    # A carriage return starts the line again, as on the terminal (the progress indicator's frames).
    lines = [line.rsplit("\r", 1)[-1] for line in text.split("\n")]
    return lines[:-1]  # the last piece is the prompt


def check(name, got, expected):
    if got != expected:
        failures.append(f"{name}: expected {expected!r}, got {got!r}")
        print(f"FAIL {name}: expected {expected!r}, got {got!r}")
    else:
        print(f"ok   {name}")


def wait_exit(repl, timeout):
    """The REPL's exit status once it ends (None if it did not within `timeout` s), draining its output."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid, status = os.waitpid(repl.pid, os.WNOHANG)
        if pid:
            return os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
        try:
            if select.select([repl.fd], [], [], 0.2)[0]:
                repl.buffer += os.read(repl.fd, 4096)
        except OSError:
            time.sleep(0.1)
    return None


def main():
    with tempfile.TemporaryDirectory(prefix="ci-repl-") as state_dir:
        # Ctrl-C while the sandbox starts cancels the start: exit 4, saying so.
        repl = Repl(state_dir)
        repl.read_until(b"starting the pyodide sandbox", 30)
        repl.send(b"\x03")
        check("Ctrl-C during the start exits 4", wait_exit(repl, 30), 4)
        check("... saying the start was cancelled", lines_of(repl.buffer)[-1:],
              ["code-interpreter: the sandbox could not start (start_runtime): "
               "cancelled while the Pyodide runtime was starting"])

        repl = Repl(state_dir)
        start = repl.read_until(b">>> ", 120)
        # stderr is a terminal, so a progress indicator turns while the sandbox starts, then its line is erased.
        check("progress indicator", start.startswith(b"\rstarting the pyodide sandbox |"), True)
        banner = lines_of(start[start.rindex(b"\r\x1b[K") + 4:])
        check("banner", banner, ["code-interpreter repl on pyodide (python); :help for help, :quit or Ctrl-D to leave"])

        check("an assignment prints nothing", repl.enter("x = 41"), [])
        check("state is kept across inputs", repl.enter("x + 1"), ["42"])

        repl.send(b"def f():\r")
        repl.read_until(b"... ", 10)
        repl.send(b"    return x * 2\r")
        repl.read_until(b"... ", 10)
        repl.send(b"\r")
        raw = repl.read_until(b">>> ", 30)
        check("a block ends at an empty line and prints nothing", [l for l in lines_of(raw) if l], [])
        check("the block's function runs", repl.enter("f()"), ["82"])
        check("an open bracket continues", (repl.send(b"[1,\r"), repl.read_until(b"... ", 10))[1][-4:], b"... ")
        check("the bracket closes the input", repl.enter("2 ]"), ["[1, 2]"])

        check("a file written", repl.enter("import os; os.makedirs('/files', exist_ok=True)"), [])
        check("...", repl.enter("_ = open('/files/a.txt', 'w').write('hello')"), [])
        check(":files lists the upload directory", repl.enter(":files"), ["a.txt\t5"])
        check(":files DIR", repl.enter(":files /files"), ["a.txt\t5"])

        check(":examples", repl.enter(":examples"), ["answer\tprint(6 * 7)", "squares\tsquares = [n * n for n in range(5)]"])
        check(":example NAME", repl.enter(":example answer"), ["42"])

        # Ctrl-C at the prompt discards what was typed.
        repl.send(b"abc")
        repl.read_until(b"abc", 10)
        repl.send(b"\x03")
        repl.read_until(b">>> ", 10)
        check("Ctrl-C at the prompt discards the line", repl.enter("1 + 1"), ["2"])

        for code in ("while True: pass", "import time; time.sleep(60)"):
            repl.send(code.encode() + b"\r")
            repl.read_until(code.encode() + b"\r\n", 10)
            time.sleep(2)  # the input is running
            started = time.monotonic()
            repl.send(b"\x03")
            out = lines_of(repl.read_until(b">>> ", 20))
            took = time.monotonic() - started
            # The terminal echoes the ^C; the REPL prints KeyboardInterrupt after it, as Python's REPL does.
            check(f"Ctrl-C interrupts {code!r}: last line", out[-1:], ["^CKeyboardInterrupt"])
            check(f"Ctrl-C interrupts {code!r} within 10 s", took < 10, True)
            check(f"after Ctrl-C in {code!r} the state is kept", repl.enter("x"), ["41"])

        check(":reset", repl.enter(":reset", timeout=120)[-1:], ["a fresh sandbox: every variable and file is gone"])
        after = repl.enter("x")
        check("after :reset x is gone", after[-1:], ["NameError: name 'x' is not defined"])

        repl.send(b":quit\r")
        check(":quit exits 0", wait_exit(repl, 30), 0)

        with open(os.path.join(state_dir, "code_interpreter", "history"), encoding="utf-8") as f:
            history = f.read().splitlines()
        # libedit's history file: a version line, then one entry per line with spaces as \040.
        check("history file header", history[:1], ["_HiStOrY_V2_"])
        check("history keeps the inputs", history[1:3], ["x\\040=\\04041", "x\\040+\\0401"])
        check("the history file is the user's alone", oct(os.stat(os.path.join(state_dir, "code_interpreter",
                                                                             "history")).st_mode & 0o777), "0o600")

    # A history that cannot be written (its directory would be under a file) is skipped; input from a pipe works.
    p = subprocess.run([CLI, "repl"], input="x = 20\nx * 2\n:quit\n", capture_output=True, text=True, timeout=120,
                       env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "XDG_STATE_HOME": "/dev/null"})
    check("an unwritable history is skipped", (p.returncode, p.stdout), (0, "40\n"))
    if failures:
        print(f"{len(failures)} failed")
        sys.exit(1)


if __name__ == "__main__":
    main()
