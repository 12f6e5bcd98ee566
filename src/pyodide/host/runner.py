# Runs one piece of user code for host.mjs and describes the outcome as JSON.
#
# Lives in a module of its own; user code gets a separate globals dict that persists across calls of one sandbox.
# Catching BaseException here is what keeps SystemExit and KeyboardInterrupt from escaping into the JS event loop
# (docs/protocols/pyodide.md "Runs, results and errors"); _on_interrupt below keeps the host's interrupt from being raised outside the user's code.
import asyncio as _asyncio
import json as _json
import os as _os
import signal as _signal
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
    # Lone surrogates (from surrogateescape, say) cannot be encoded as UTF-8 JSON: show them as escapes.
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
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


# The host's interrupt (a timeout or a cancel) arrives as SIGINT, checked between any two bytecodes, also those of
# the event loop and of this module. Raised there, KeyboardInterrupt would escape the task and end the runtime. So
# it is raised only while the user's code is on the stack. Elsewhere (the event loop runs while the user's frames
# are suspended at an await) the run's task is cancelled instead, which raises CancelledError at the await where
# the user's code waits; python_worker.mjs does the same when the interrupt arrives while no bytecode runs at all
# (cancel_run). time.sleep waits on the interrupt itself (install_sleep) and raises KeyboardInterrupt at once
# (docs/protocols/pyodide.md "Interrupts").
_run_task = None


def _user_code_on_stack(frame):
    while frame is not None:
        if frame.f_code.co_filename == CODE_FILENAME:
            return True
        frame = frame.f_back
    return False


def _on_interrupt(signum, frame):
    task = _run_task
    if task is None:
        return  # no run in progress: nothing to stop
    if _user_code_on_stack(frame):
        raise KeyboardInterrupt
    if not task.done():
        task.cancel()


_signal.signal(_signal.SIGINT, _on_interrupt)


def cancel_run():
    """Cancel the run's task: the host's interrupt arrived while the user's code waited at an await. True when there
    was a task to cancel."""
    task = _run_task
    if task is not None and not task.done():
        task.cancel()
        return True
    return False


# CPython's limit: a length whose nanoseconds do not fit a signed 64-bit integer.
_SLEEP_MAX = (2**63 - 1) / 1e9


def install_sleep(wait):
    """Replace time.sleep by one that sleeps in `wait(seconds)` (python_worker.mjs), which ends at the host's
    interrupt and raises KeyboardInterrupt there. Pyodide's own time.sleep suspends the whole stack (JSPI) until an
    asyncio timer fires, where no interrupt reaches it. Arguments are judged as CPython's time.sleep judges them."""
    import math
    import operator
    import time

    real = time.sleep

    def sleep(secs, /):
        if isinstance(secs, float):
            length = float(secs)
        else:
            length = operator.index(secs)  # TypeError for what is neither a float nor an integer, as CPython
        if math.isnan(length):
            raise ValueError("Invalid value NaN (not a number)")
        if length < 0:
            raise ValueError("sleep length must be non-negative")
        if length > _SLEEP_MAX:
            raise OverflowError("timestamp too large to convert to C PyTime_t")
        wait(float(length))

    sleep.__doc__ = real.__doc__
    sleep.__module__ = "time"
    sleep.__qualname__ = "sleep"
    time.sleep = sleep


async def run(code, env_json):
    global _run_task
    _run_task = _asyncio.current_task()
    saved = {}
    out = {"status": "ok"}
    try:
        saved = _apply_env(_json.loads(env_json))
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
    except (KeyboardInterrupt, _asyncio.CancelledError) as exc:
        out = {"status": "interrupted", "error": _describe(exc)}
    except BaseException as exc:
        out = {"status": "error", "exit_code": 1, "error": _describe(exc)}
    finally:
        _run_task = None
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
