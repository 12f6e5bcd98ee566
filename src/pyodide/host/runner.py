# Runs one piece of user code for host.mjs and describes the outcome as JSON.
#
# Lives in a module of its own; user code gets a separate globals dict that persists across calls of one sandbox.
# Catching BaseException here is what keeps SystemExit and KeyboardInterrupt from escaping into the JS event loop
# (docs/protocols/pyodide.md "Runs, results and errors"); _on_interrupt below keeps the host's interrupt from being raised outside the user's code.
import asyncio as _asyncio
import base64 as _base64
import importlib.abc as _importlib_abc
import importlib.util as _importlib_util
import json as _json
import linecache as _linecache
import os as _os
import signal as _signal
import sys as _sys
import traceback as _traceback

from pyodide.code import eval_code_async as _eval_code_async

# Each cell's code is registered with linecache under a name of its own, "<code-N>" (N counts this runtime's cells
# from 1), so a traceback shows the source lines of the cell each frame is in, also of a function an earlier cell
# defined.
CODE_FILENAME_PREFIX = "<code-"
_cells = 0


def _is_user_file(filename):
    return filename.startswith(CODE_FILENAME_PREFIX)

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
    while tb is not None and not _is_user_file(tb.tb_frame.f_code.co_filename):
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
        if _is_user_file(frame.f_code.co_filename):
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


# ---- rich output: display(), the _repr_*_ protocol, matplotlib's show (docs/backends/pyodide.md "Charts") ----

# The formats taken from an object, in the order IPython tries them; binary ones are sent as base64.
_REPR_METHODS = (
    ("image/png", "_repr_png_", True),
    ("image/jpeg", "_repr_jpeg_", True),
    ("image/svg+xml", "_repr_svg_", False),
    ("text/html", "_repr_html_", False),
    ("text/markdown", "_repr_markdown_", False),
    ("text/latex", "_repr_latex_", False),
    ("application/json", "_repr_json_", False),
)
# All the rich data of one run together, in UTF-8 bytes, and the most displays and formats per display: past them
# later displays (or formats) are dropped and the run says so. The byte cap leaves room in host.mjs's 8 MiB answer
# header for the rest of the answer (three texts of at most TEXT_CAP characters each).
DISPLAY_CAP = 6 * 1024 * 1024
MAX_DISPLAYS = 1000
MAX_FORMATS = 32
_displays = []
_display_chars = 0
_displays_dropped = False


def _text_of(mime, value, binary):
    if binary:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return _base64.b64encode(bytes(value)).decode("ascii")
        return value if isinstance(value, str) else None
    if mime == "application/json":
        return _json.dumps(value)
    if isinstance(value, tuple) and value:  # (data, metadata), as IPython accepts
        value = value[0]
    return value if isinstance(value, str) else None


def _bundle(obj):
    """The object's formats as {mime type: text}: its _repr_mimebundle_ or _repr_*_ methods, and repr() as
    text/plain. A method that raises or returns None is skipped, as IPython skips it."""
    data = {}
    method = getattr(type(obj), "_repr_mimebundle_", None)
    if method is not None:
        try:
            got = method(obj)
            if isinstance(got, tuple):
                got = got[0]
            if isinstance(got, dict):
                for mime, value in got.items():
                    if isinstance(mime, str) and 0 < len(mime) <= 100:
                        binary = mime.startswith("image/") and not mime.startswith("image/svg")
                        text = _text_of(mime, value, binary)
                        if text is not None:
                            data[mime] = text
        except Exception:
            pass
    for mime, name, binary in _REPR_METHODS:
        if mime in data:
            continue
        method = getattr(type(obj), name, None)
        if method is None:
            continue
        try:
            value = method(obj)
        except Exception:
            continue
        if value is None:
            continue
        try:
            text = _text_of(mime, value, binary)
        except Exception:
            text = None
        if text is not None:
            data[mime] = text
    if "text/plain" not in data:
        try:
            data["text/plain"] = repr(obj)
        except BaseException as exc:
            data["text/plain"] = "<repr() failed: %s>" % type(exc).__name__
    # Mime types are short ASCII names; texts get lone surrogates (from surrogateescape, say) written as escapes, as
    # _cap does, since they cannot travel as UTF-8 JSON.
    global _displays_dropped
    out = {}
    for k, v in data.items():
        if not (k.isascii() and k.isprintable()):
            _displays_dropped = True
            continue
        if len(out) == MAX_FORMATS - 1 and k != "text/plain" and "text/plain" not in out:
            _displays_dropped = True  # room is kept for text/plain
            continue
        if len(out) >= MAX_FORMATS:
            _displays_dropped = True
            continue
        out[k] = _cap(v) if k == "text/plain" else v.encode("utf-8", "backslashreplace").decode("utf-8")
    return out


def _size(bundle):
    return sum(len(k) + len(v.encode("utf-8")) for k, v in bundle.items())


def _add_display(bundle):
    global _display_chars, _displays_dropped
    size = _size(bundle)
    if len(_displays) >= MAX_DISPLAYS or _display_chars + size > DISPLAY_CAP:
        _displays_dropped = True
        return
    _display_chars += size
    _displays.append(bundle)


def display(*objs, **_ignored):
    """Shows each object as a rich result of the run, in order (IPython.display.display's calling form)."""
    for obj in objs:
        _add_display(_bundle(obj))


class _Rich:
    """IPython.display's data classes (Image, HTML, Markdown, SVG, JSON, Latex): an object that shows as one format."""

    _mime = "text/plain"

    def __init__(self, data=None, url=None, filename=None, **_ignored):
        if filename is not None:
            with open(filename, "rb" if self._binary() else "r") as f:
                data = f.read()
        self.data = data

    @classmethod
    def _binary(cls):
        return cls._mime.startswith("image/") and cls._mime != "image/svg+xml"

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {self._mime: self.data}

    def __repr__(self):
        return "<IPython.display.%s object>" % type(self).__name__


def _rich_class(name, mime):
    return type(name, (_Rich,), {"_mime": mime, "__module__": "IPython.display"})


class _IPythonShim(_importlib_abc.MetaPathFinder, _importlib_abc.Loader):
    """IPython.display for code written for Jupyter, when IPython itself is not installed: the finder sits last on
    sys.meta_path, so a real IPython always wins."""

    def find_spec(self, fullname, path, target=None):
        if fullname in ("IPython", "IPython.display"):
            return _importlib_util.spec_from_loader(fullname, self, is_package=fullname == "IPython")
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.display = display
        if module.__name__ == "IPython.display":
            module.Image = _rich_class("Image", "image/png")
            module.HTML = _rich_class("HTML", "text/html")
            module.Markdown = _rich_class("Markdown", "text/markdown")
            module.SVG = _rich_class("SVG", "image/svg+xml")
            module.JSON = _rich_class("JSON", "application/json")
            module.Latex = _rich_class("Latex", "text/latex")


def _show_figures(*_args, **_kwargs):
    """matplotlib.pyplot.show under the Agg backend: every open figure becomes an image/png display, then is
    closed, as Jupyter's inline backend does."""
    import io

    import matplotlib.pyplot as plt

    for number in plt.get_fignums():
        figure = plt.figure(number)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
        width, height = figure.get_size_inches() * figure.dpi
        _add_display({
            "image/png": _base64.b64encode(buffer.getvalue()).decode("ascii"),
            "text/plain": "<Figure size %dx%d with %d Axes>" % (width, height, len(figure.axes)),
        })
    plt.close("all")


class _PyplotHook(_importlib_abc.MetaPathFinder):
    """Replaces matplotlib.pyplot.show once pyplot is imported (the finder sits first and defers to the others)."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "matplotlib.pyplot":
            return None
        for finder in _sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                real = spec.loader.exec_module

                def exec_module(module, _real=real):
                    _real(module)
                    module.show = _show_figures

                spec.loader.exec_module = exec_module
                return spec
        return None


_os.environ.setdefault("MPLBACKEND", "Agg")
_sys.meta_path.insert(0, _PyplotHook())
_sys.meta_path.append(_IPythonShim())
# A built-in, as IPython makes it: the user's globals stay the user's own.
import builtins as _builtins

_builtins.display = display


async def run(code, env_json, cell=True):
    global _run_task, _cells, _display_chars, _displays_dropped
    _run_task = _asyncio.current_task()
    saved = {}
    out = {"status": "ok"}
    _displays.clear()
    _display_chars = 0
    _displays_dropped = False
    if cell:
        _cells += 1
        filename = "%s%d>" % (CODE_FILENAME_PREFIX, _cells)
        _linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    else:
        filename = "<warm-up>"
    try:
        saved = _apply_env(_json.loads(env_json))
        value = await _eval_code_async(code, _user_globals, filename=filename)
        if value is not None:
            bundle = _bundle(value)
            out["value"] = bundle.pop("text/plain")
            if bundle and _display_chars + _size(bundle) <= DISPLAY_CAP:
                out["value_data"] = bundle
            elif bundle:
                _displays_dropped = True
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
    if _displays:
        out["displays"] = list(_displays)
    if _displays_dropped:
        out["displays_dropped"] = True
    _displays.clear()
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
