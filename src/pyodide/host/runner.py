# Runs one piece of user code for host.mjs and describes the outcome as JSON.
#
# Lives in Pyodide's own __main__; user code gets a separate globals dict that persists across calls of one sandbox.
# Catching BaseException here is what keeps SystemExit and KeyboardInterrupt from escaping into the JS event loop,
# which would kill the runtime (pyodide.md §1.5).
import json as _json
import os as _os
import sys as _sys
import traceback as _traceback

from pyodide.code import eval_code_async as _eval_code_async

CODE_FILENAME = "<code>"

_user_globals = {"__name__": "__main__", "__builtins__": __builtins__}

# Emscripten's default environment names the host script's path in "_"; the code has no use for it.
_os.environ.pop("_", None)

# Line-buffered streams, so each line reaches the host as it is printed.
for _stream in (_sys.stdout, _sys.stderr):
    try:
        _stream.reconfigure(line_buffering=True)
    except (AttributeError, ValueError):
        pass


# Texts that go into a frame header are capped, so a huge repr or message cannot exceed the frame limits.
TEXT_CAP = 256 * 1024


def _cap(text):
    if len(text) <= TEXT_CAP:
        return text
    half = TEXT_CAP // 2
    return "%s\n... [%d characters cut] ...\n%s" % (text[:half], len(text) - 2 * half, text[-half:])


def _user_traceback(exc):
    """The formatted exception with every frame before the first frame of the user's code removed."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != CODE_FILENAME:
        tb = tb.tb_next
    return "".join(_traceback.format_exception(type(exc), exc, tb)).rstrip("\n")


def _describe(exc):
    try:
        value = str(exc)
    except BaseException:
        value = "<str() failed>"
    return {"name": _cap(type(exc).__name__), "value": _cap(value), "traceback": _cap(_user_traceback(exc))}


def _flush():
    for stream in (_sys.stdout, _sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def _apply_env(env):
    saved = {}
    for key, value in env.items():
        saved[key] = _os.environ.get(key)
        _os.environ[key] = value
    return saved


def _restore_env(saved):
    for key, value in saved.items():
        if value is None:
            _os.environ.pop(key, None)
        else:
            _os.environ[key] = value


def _exit_code(code):
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        # Beyond a C int, CPython's own exit would fail to convert the value and exit with 1.
        return code if -(2**31) <= code < 2**31 else 1
    if isinstance(code, bool):
        return int(code)
    return 1


async def run(code, env_json):
    saved = _apply_env(_json.loads(env_json))
    out = {"status": "ok"}
    try:
        value = await _eval_code_async(code, _user_globals, filename=CODE_FILENAME)
        if value is not None:
            try:
                out["value"] = _cap(repr(value))
            except BaseException as exc:
                out["value"] = "<repr() failed: %s>" % type(exc).__name__
    except SystemExit as exc:
        status = _exit_code(exc.code)
        if status == 0:
            out = {"status": "ok", "exit_code": 0}
        else:
            out = {"status": "error", "exit_code": status, "error": _describe(exc)}
    except KeyboardInterrupt as exc:
        out = {"status": "interrupted", "error": _describe(exc)}
    except BaseException as exc:
        out = {"status": "error", "exit_code": 1, "error": _describe(exc)}
    finally:
        _restore_env(saved)
        _flush()
    return _json.dumps(out)


def verify_distribution(name):
    """Import every top-level module of an installed distribution; raise if it is missing or does not import."""
    import importlib
    import importlib.metadata

    dist = importlib.metadata.distribution(name)
    tops = set()
    for path in dist.files or ():
        first = path.parts[0]
        if first.endswith((".dist-info", ".data")) or first == "__pycache__":
            continue
        if len(path.parts) == 1:
            if first.endswith(".py"):
                tops.add(first[:-3])
        else:
            tops.add(first)
    for top in sorted(tops):
        importlib.import_module(top)
    return sorted(tops)
