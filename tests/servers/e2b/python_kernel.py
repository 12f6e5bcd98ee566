"""One persistent Python "kernel" for the local E2B server (one process per code context).

Channels (set up by server.mjs):
  fd 3  requests from the server, one JSON object per line:
        {"id": n, "code": "...", "env_vars": {...}, "sync": "<token>"}
  fd 4  messages to the server, one JSON object per line:
        {"t": "result", "id": n, "data": {...}, "main": bool}
        {"t": "error", "id": n, "name": ..., "value": ..., "traceback": ...}
        {"t": "done", "id": n}
  fd 1/2 the user's stdout/stderr (print() and any subprocess writing to the inherited fds). After each
        execution the driver writes the sync token to both, so the server knows every byte produced by
        that execution has arrived before it ends the /execute stream (docs/protocols/e2b.md "The /execute stream": end_of_execution last).

Paths: the sandbox's filesystem root is a host directory (E2B_SANDBOX_ROOT). Absolute paths under the
sandbox-only prefixes (/home/user, /files, /tmp) are rewritten into that root by a small shim around
open() and the os functions that take paths, so code sees the same files as the envd file API.
"""

import ast
import base64
import builtins
import io
import json
import linecache
import os
import signal
import sys
import threading
import time
import traceback

ROOT = os.environ.get("E2B_SANDBOX_ROOT", "")
MAPPED_PREFIXES = ("/home/user", "/files", "/tmp")
DRIVER_FILE = os.path.abspath(__file__)

# ---------------------------------------------------------------------------------------------- path shim


def _map(p):
    """Map a sandbox absolute path to its host location; anything else is returned unchanged."""
    if not ROOT:
        return p
    if isinstance(p, os.PathLike):
        p = os.fspath(p)
    if isinstance(p, str):
        # Already a host path inside the root (the root itself may live under /tmp): leave it alone.
        if p == ROOT or p.startswith(ROOT + "/"):
            return p
        for pre in MAPPED_PREFIXES:
            if p == pre or p.startswith(pre + "/"):
                return ROOT + p
    elif isinstance(p, bytes):
        broot = ROOT.encode()
        if p == broot or p.startswith(broot + b"/"):
            return p
        for pre in MAPPED_PREFIXES:
            b = pre.encode()
            if p == b or p.startswith(b + b"/"):
                return ROOT.encode() + p
    return p


def _unmap(p):
    """Inverse of _map for getcwd(): a host path inside the root is reported as the sandbox path."""
    if ROOT and isinstance(p, str) and (p == ROOT or p.startswith(ROOT + "/")):
        return p[len(ROOT):] or "/"
    return p


def _wrap1(fn):
    def wrapper(*args, **kwargs):
        if args:
            args = (_map(args[0]),) + args[1:]
        for key in ("path", "file", "name"):
            if key in kwargs:
                kwargs[key] = _map(kwargs[key])
        return fn(*args, **kwargs)

    wrapper.__name__ = getattr(fn, "__name__", "wrapper")
    wrapper.__doc__ = getattr(fn, "__doc__", None)
    return wrapper


def _wrap2(fn):
    def wrapper(src, dst, *args, **kwargs):
        return fn(_map(src), _map(dst), *args, **kwargs)

    wrapper.__name__ = getattr(fn, "__name__", "wrapper")
    return wrapper


def install_path_shim():
    if not ROOT:
        return
    real_open = builtins.open
    builtins.open = _wrap1(real_open)
    io.open = builtins.open
    for name in ("open", "stat", "lstat", "listdir", "scandir", "mkdir", "remove", "unlink", "rmdir",
                 "chdir", "access", "chmod", "utime", "truncate", "readlink", "makedirs", "removedirs"):
        fn = getattr(os, name, None)
        if fn is not None:
            setattr(os, name, _wrap1(fn))
    for name in ("rename", "replace", "link", "symlink"):
        fn = getattr(os, name, None)
        if fn is not None:
            setattr(os, name, _wrap2(fn))
    real_getcwd = os.getcwd
    os.getcwd = lambda: _unmap(real_getcwd())


# ---------------------------------------------------------------------------------------------- output


class OutStream(io.TextIOBase):
    """Line-oriented stdout/stderr: complete lines are written at once (so print("hi") reaches the server
    as "hi\\n" in one piece); a partial line is flushed after 100 ms, as Jupyter's stream does."""

    def __init__(self, fd, name):
        super().__init__()
        self._fd = fd
        self._name = name
        self._buf = ""
        self._since = 0.0
        self._lock = threading.RLock()

    @property
    def encoding(self):
        return "utf-8"

    @property
    def errors(self):
        return "surrogateescape"

    @property
    def name(self):
        return self._name

    def fileno(self):
        return self._fd

    def isatty(self):
        return False

    def writable(self):
        return True

    def _emit(self, text):
        data = text.encode("utf-8", "surrogateescape")
        while data:
            n = os.write(self._fd, data)
            data = data[n:]

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        with self._lock:
            if not self._buf:
                self._since = time.monotonic()
            self._buf += s
            cut = self._buf.rfind("\n")
            if cut >= 0:
                head, self._buf = self._buf[: cut + 1], self._buf[cut + 1:]
                self._since = time.monotonic()
                self._emit(head)
        return len(s)

    def flush(self):
        with self._lock:
            if self._buf:
                head, self._buf = self._buf, ""
                self._emit(head)

    def flush_if_idle(self, idle):
        with self._lock:
            if self._buf and time.monotonic() - self._since >= idle:
                self.flush()


def _flusher(streams):
    while True:
        time.sleep(0.05)
        for s in streams:
            try:
                s.flush_if_idle(0.1)
            except Exception:
                pass


# ---------------------------------------------------------------------------------------------- protocol

_msg_lock = threading.Lock()
_msg_out = os.fdopen(4, "wb", buffering=0)


def send(obj):
    data = (json.dumps(obj) + "\n").encode("utf-8")
    with _msg_lock:
        _msg_out.write(data)


_executing = False


def _on_sigint(signum, frame):
    # The server interrupts only a running execution (client disconnected, docs/protocols/e2b.md "Code-interpreter requests"); a signal that
    # lands between executions must not kill the driver.
    if _executing:
        raise KeyboardInterrupt


def _strip_quotes(text):
    if len(text) >= 2 and text[0] == text[-1] and text[0] in ("'", '"'):
        return text[1:-1]
    return text


def _formats(value, is_main):
    """MIME bundle of a value, keyed by the names used on the /execute wire (docs/protocols/e2b.md "Fields of the /execute events")."""
    data = {}
    try:
        text = repr(value)
    except Exception as e:  # a broken __repr__ must not break the execution
        text = "<repr failed: %s>" % type(e).__name__
    data["text"] = _strip_quotes(text) if isinstance(value, str) else text
    probes = (
        ("_repr_html_", "html"), ("_repr_markdown_", "markdown"), ("_repr_svg_", "svg"),
        ("_repr_png_", "png"), ("_repr_jpeg_", "jpeg"), ("_repr_pdf_", "pdf"), ("_repr_latex_", "latex"),
        ("_repr_json_", "json"), ("_repr_javascript_", "javascript"),
    )
    for attr, key in probes:
        fn = getattr(type(value), attr, None)
        if fn is None:
            continue
        try:
            out = fn(value)
        except Exception:
            continue
        if out is None:
            continue
        if isinstance(out, (bytes, bytearray)):
            out = base64.b64encode(bytes(out)).decode("ascii")
        data[key] = out
    return data


def _format_error(exc):
    tb = exc.__traceback__
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) == DRIVER_FILE:
        tb = tb.tb_next
    if isinstance(exc, SyntaxError):
        lines = traceback.format_exception_only(type(exc), exc)
    else:
        lines = traceback.format_exception(type(exc), exc, tb)
    return "".join(lines)


class Kernel:
    def __init__(self):
        self.globals = {"__name__": "__main__", "__builtins__": builtins}
        self.globals["display"] = self.display
        self.current = None
        self.sync = "0" * 16
        self.seq = 0

    def display(self, *objs):
        for obj in objs:
            self.emit({"t": "result", "id": self.current, "data": _formats(obj, False), "main": False})

    def emit(self, msg):
        """Sends a message after every byte of output written before it: the sync token goes down
        stdout and stderr first, and the server holds the message until it has seen both tokens."""
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except Exception:
                pass
        self.seq += 1
        tok = "%s.%d" % (self.sync, self.seq)
        raw = ("\x00" + tok + "\x00").encode("ascii")
        try:
            os.write(1, raw)
            os.write(2, raw)
            msg["sync"] = tok
        except OSError:
            msg["sync"] = None  # the code closed a stream; the server then does not wait
        send(msg)

    def run(self, req):
        global _executing
        rid = req.get("id")
        self.current = rid
        self.sync = str(req.get("sync", "0" * 16))
        self.seq = 0
        code = req.get("code", "")
        env_vars = req.get("env_vars") or {}
        filename = "<cell In[%s]>" % rid
        saved = {}
        for k, v in env_vars.items():
            saved[k] = os.environ.get(k)
            os.environ[str(k)] = str(v)
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        _executing = True
        try:
            try:
                tree = ast.parse(code, filename, "exec")
                last = None
                if tree.body and isinstance(tree.body[-1], ast.Expr):
                    last = ast.Expression(tree.body.pop().value)
                exec(compile(tree, filename, "exec"), self.globals)
                if last is not None:
                    value = eval(compile(last, filename, "eval"), self.globals)
                    if value is not None:
                        self.globals["_"] = value
                        self.emit({"t": "result", "id": rid, "data": _formats(value, True), "main": True})
            except BaseException as exc:  # SystemExit and KeyboardInterrupt are cell errors too
                _executing = False
                self.emit({"t": "error", "id": rid, "name": type(exc).__name__, "value": str(exc),
                           "traceback": _format_error(exc)})
        finally:
            _executing = False
            for k, old in saved.items():
                if old is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = old
            self.emit({"t": "done", "id": rid})


def _watch_parent(ppid):
    # If the server dies without cleaning up, do not outlive it.
    while True:
        time.sleep(0.5)
        if os.getppid() != ppid:
            os._exit(0)


def main():
    ppid = os.getppid()
    threading.Thread(target=_watch_parent, args=(ppid,), daemon=True).start()
    signal.signal(signal.SIGINT, _on_sigint)
    out, err = OutStream(1, "<stdout>"), OutStream(2, "<stderr>")
    sys.stdout, sys.stderr = out, err
    threading.Thread(target=_flusher, args=((out, err),), daemon=True).start()
    install_path_shim()
    kernel = Kernel()
    pending = b""
    while True:
        try:
            chunk = os.read(3, 65536)
        except KeyboardInterrupt:
            continue
        except InterruptedError:
            continue
        if not chunk:
            os._exit(0)
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if not line.strip():
                continue
            try:
                req = json.loads(line)
            except ValueError:
                continue
            kernel.run(req)


if __name__ == "__main__":
    main()
