"""One persistent Python process per Bedrock session (executeCode with language "python", docs/protocols/bedrock.md "Tools").

All executions share ONE globals dict, so state survives between calls; a request with "clear": true
replaces it with a fresh one first (the clearContext argument).

Channels (set up by server.mjs):
  fd 3  requests, one JSON object per line: {"id": n, "code": "...", "clear": bool}
  fd 4  replies, one JSON object per line:
        {"id": n, "stdout": str, "stderr": str, "exitCode": int, "executionTime": ms, "truncated": bool}
  fd 0  /dev/null. fd 1/2 are redirected (dup2) into capture files under $BEDROCK_KERNEL_CTL for the
        duration of each execution, so print() and subprocesses writing to the inherited fds are both
        captured, then restored. Output is only returned with the result: the service sends one `result`
        event per call (docs/protocols/bedrock.md "Events and exception frames"), so nothing needs to stream.
"""

import builtins
import json
import os
import sys
import time
import traceback

CTL = os.environ["BEDROCK_KERNEL_CTL"]
CAP = int(os.environ.get("BEDROCK_OUTPUT_CAP", str(16 << 20)))  # bytes kept per stream
KERNEL_FILE = os.path.abspath(__file__)


def fresh_globals():
    return {"__name__": "__main__", "__builtins__": builtins, "__doc__": None}


def read_capture(path):
    with open(path, "rb") as f:
        data = f.read(CAP + 1)
    truncated = len(data) > CAP
    # JSON strings must be text; undecodable bytes become U+FFFD (documented in README.md).
    return data[:CAP].decode("utf-8", "replace"), truncated


def format_exception(exc):
    """Traceback text of the user's exception without this driver's frames."""
    tb = exc.__traceback__
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) == KERNEL_FILE:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def run(code, g):
    """Runs code in g. Returns (exit code, error text or None)."""
    try:
        compiled = compile(code, "<string>", "exec")
        exec(compiled, g)
        return 0, None
    except SystemExit as e:
        # sys.exit(): None/0 is success, an int is the status, anything else is printed and gives 1.
        if e.code is None:
            return 0, None
        if isinstance(e.code, int):
            return e.code, None
        return 1, str(e.code) + "\n"
    except BaseException as e:  # noqa: BLE001 - every user failure becomes a result
        return 1, format_exception(e)


def main():
    requests = os.fdopen(3, "r", encoding="utf-8")
    replies = os.fdopen(4, "w", encoding="utf-8")
    g = fresh_globals()
    out_path = os.path.join(CTL, "py.stdout")
    err_path = os.path.join(CTL, "py.stderr")
    saved_out = os.dup(1)
    saved_err = os.dup(2)
    for line in requests:
        if not line.strip():
            continue
        req = json.loads(line)
        if req.get("clear"):
            g = fresh_globals()
        fo = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        fe = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(fo, 1)
        os.dup2(fe, 2)
        os.close(fo)
        os.close(fe)
        t0 = time.perf_counter()
        status, err_text = run(req["code"], g)
        elapsed = (time.perf_counter() - t0) * 1000.0
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - user code may have closed or replaced a stream
                pass
        if err_text:
            # As CPython writes to its stderr: a lone surrogate (surrogateescape) as a backslash escape.
            os.write(2, err_text.encode("utf-8", "backslashreplace"))
        os.dup2(saved_out, 1)
        os.dup2(saved_err, 2)
        stdout, t1 = read_capture(out_path)
        stderr, t2 = read_capture(err_path)
        replies.write(json.dumps({"id": req["id"], "stdout": stdout, "stderr": stderr, "exitCode": status,
                                  "executionTime": round(elapsed, 3), "truncated": t1 or t2}) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
