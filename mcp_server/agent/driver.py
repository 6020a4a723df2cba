"""sandbox-agent's Python driver: runs code cells in one persistent namespace (like a notebook).

It is embedded into the agent at build time and started as `python3 -c <this file>`.
Protocol (one JSON object per line):
  fd 3, agent -> driver: {"cell": int, "code": str, "max_result_chars": int, "max_images": int,
        "image_max_bytes": int, "image_max_px": int, "figures_dir": str}
  fd 4, driver -> agent: first {"ready": true, "version": "3.11.2"}, then one reply per
        command, naming its cell: {"cell": int, "status": "success" | "error",
                  "exit_code": int, "result": str | null,
                  "interrupted": bool, "exec_ms"?: float (the code's own run time), "images"?: [{"path", "width", "height", "bytes",
                  "data_b64"}], "table"?: {"kind", "shape", "dtypes", "dtypes_cut"}}
Packages pip installs while the session runs (into the user site: the root is read-only) import
in this interpreter too, in the same cell or a later one: _UserSite keeps sys.path and the import
caches in step with that directory.
Figures a cell leaves open (or shows with plt.show(), or passes to display()) and values with
_repr_png_ come back as PNG images, saved full size under figures_dir and sent inline downscaled
to the limits; a pandas DataFrame/Series value comes back as a compact text table plus its shape
and dtypes (rich_display.py holds that part).
User code's stdout/stderr are this process's fd 1/2: pipes the agent reads, so output of
subprocesses is captured too. stdout is block-buffered (a write syscall per 64 KiB, not per print:
under gVisor a syscall costs 10-50x what it does natively) and flushed every 50 ms while a cell
runs, so a line printed before a sleep still shows at once; a write to stderr first flushes
stdout, so the two keep their order. Everything is flushed before a reply is written, so output
is never attributed to the next cell.
"""

import ast
import builtins
import importlib
import importlib.machinery
import io
import json
import linecache
import os
import signal
import site
import sys
import threading
import time
import traceback
import types

_COMMAND_FD = 3
_REPLY_FD = 4
_DRIVER_GLOBALS = globals()  # tells the driver's frames apart from the user's in tracebacks


_OUTPUT_BUFFER_BYTES = 64 * 1024
_FLUSH_INTERVAL_S = 0.05


class _State:
    running = False  # True while user code runs: only then does SIGINT raise KeyboardInterrupt
    cells = 0
    stdout = None  # the driver's own buffered stdout (user code may rebind sys.stdout)
    stderr = None  # and its line-buffered stderr
    cell_running = threading.Event()  # set while a cell runs: the flusher works only then
    flush_lock = threading.Lock()  # held by the flusher while it flushes; and across a fork


class _StderrAfterStdout(io.TextIOWrapper):
    """stderr, line-buffered, that flushes the buffered stdout first: output keeps its order, and
    a line printed to stderr leaves in one write (print() writes its text and its newline
    separately: unbuffered, a stdout line read meanwhile could land between them)."""

    def write(self, text):
        stdout = _State.stdout
        if stdout is not None:
            try:
                stdout.flush()
            except Exception:
                pass
        return super().write(text)


def _buffered_std_streams():
    """Replaces the std streams with a block-buffered stdout and an ordered, line-buffered
    stderr, keeping their encodings and error handlers. A partial stderr line goes out when the
    flusher, a child process or the cell's end flushes."""
    out = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(1, "w", closefd=False), _OUTPUT_BUFFER_BYTES),
        encoding=sys.stdout.encoding, errors=sys.stdout.errors, line_buffering=False)
    err = _StderrAfterStdout(
        io.BufferedWriter(io.FileIO(2, "w", closefd=False), _OUTPUT_BUFFER_BYTES),
        encoding=sys.stderr.encoding, errors=sys.stderr.errors, line_buffering=True)
    sys.stdout = sys.__stdout__ = _State.stdout = out
    sys.stderr = sys.__stderr__ = _State.stderr = err


def _flush_stdout():
    """Flushes the driver's stderr, then its stdout: a partial stderr line was written before
    anything stdout holds now (a write to stderr flushes stdout first)."""
    for stream in (_State.stderr, _State.stdout):
        try:
            stream.flush()
        except Exception:
            pass


def _flush_while_cells_run():
    """Flushes stdout every _FLUSH_INTERVAL_S while a cell runs (idle between cells: no wake-ups
    in a sandbox nobody uses)."""
    while True:
        _State.cell_running.wait()
        time.sleep(_FLUSH_INTERVAL_S)
        with _State.flush_lock:
            _flush_stdout()


def _before_fork():
    # A child must not inherit the flusher in the middle of a write (the buffer's lock held by a
    # thread it does not have), nor a copy of unflushed output it would print again.
    _State.flush_lock.acquire()
    _flush_stdout()


def _flushing_stdout_first(function):
    def call(*args, **kwargs):
        _flush_stdout()
        return function(*args, **kwargs)

    call.__wrapped__ = function
    return call


def _flush_before_other_processes_write():
    """What was printed before a subprocess starts shows before what the subprocess prints: the
    ways a child gets our stdout (subprocess, os.system, posix_spawn) flush it first. So do the
    ways this process ends or becomes another without flushing (os._exit, the os.exec* family,
    which all go through execv or execve)."""
    import _posixsubprocess
    import subprocess

    _posixsubprocess.fork_exec = _flushing_stdout_first(_posixsubprocess.fork_exec)
    if getattr(subprocess, "_fork_exec", None) is not None:  # bound at its import
        subprocess._fork_exec = _posixsubprocess.fork_exec
    for name in ("system", "posix_spawn", "posix_spawnp", "_exit", "execv", "execve"):
        if hasattr(os, name):
            setattr(os, name, _flushing_stdout_first(getattr(os, name)))


def _start_flusher():
    os.register_at_fork(before=_before_fork, after_in_parent=_State.flush_lock.release,
                        after_in_child=_State.flush_lock.release)
    threading.Thread(target=_flush_while_cells_run, name="sandbox-output-flush",
                     daemon=True).start()


class _UserSite:
    """Keeps this long-lived interpreter in step with the user site directory, where pip installs
    when the system site-packages are read-only (PYTHONUSERBASE or ~/.local). Python puts that
    directory on sys.path at start only if it exists then, and its finders cache directory
    listings, so without this a package pip installs mid-session would not import before a
    restart. The directory is created at start and put where Python would have put it (before
    the system site-packages); when it changes, the import caches are dropped and new .pth files
    are processed. Checked before each cell and whenever an import finds nothing (pip ran in the
    same cell). Doing it here rather than in the image or the agent: /tmp is a fresh tmpfs in
    every sandbox, the agent runs any image and does not know the interpreter's version, and the
    interpreter is the one whose caches go stale."""

    path = None  # the user site directory; None when user site-packages are disabled (-s, ...)
    mtime_ns = None
    pth_files = set()  # .pth files processed already (by site at start, or here)
    lock = threading.RLock()  # imports run in any thread; a .pth file may import

    @classmethod
    def start(cls):
        if not site.ENABLE_USER_SITE:
            return
        cls.path = site.getusersitepackages()
        if cls.path in sys.path:  # it existed at start: site has processed its .pth files
            cls.pth_files.update(cls._pth_names())
        else:
            try:
                os.makedirs(cls.path, exist_ok=True)
            except OSError:
                pass  # no writable home: pip could not install there either
        cls.refresh()

    @classmethod
    def refresh(cls):
        """Returns True when the directory changed since the last look."""
        if cls.path is None:
            return False
        with cls.lock:
            try:
                mtime_ns = os.stat(cls.path).st_mtime_ns
            except OSError:
                return False
            if mtime_ns == cls.mtime_ns:
                return False
            cls.mtime_ns = mtime_ns
            if cls.path not in sys.path:
                system = set(site.getsitepackages())
                index = next((i for i, entry in enumerate(sys.path) if entry in system),
                             len(sys.path))
                sys.path.insert(index, cls.path)
            importlib.invalidate_caches()
            for name in sorted(cls._pth_names() - cls.pth_files):
                cls.pth_files.add(name)
                site.addpackage(cls.path, name, None)
            return True

    @classmethod
    def _pth_names(cls):
        try:
            return {name for name in os.listdir(cls.path) if name.endswith(".pth")}
        except OSError:
            return set()


class _UserSiteFinder:
    """Last on sys.meta_path: a top-level import nothing found looks again if the user site
    changed meanwhile (pip ran earlier in the same cell)."""

    @staticmethod
    def find_spec(name, path, target=None):
        if path is not None or not _UserSite.refresh():
            return None
        return importlib.machinery.PathFinder.find_spec(name, path, target)


def _on_sigint(signum, frame):
    # An interrupt that lands between cells (the agent's deadline raced the reply) is ignored.
    if _State.running:
        raise KeyboardInterrupt


def _send(message):
    data = memoryview((json.dumps(message) + "\n").encode())
    while data:
        written = os.write(_REPLY_FD, data)
        data = data[written:]


def _flush_output():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__, _State.stdout):
        try:
            stream.flush()
        except Exception:
            pass


def _without_driver_frames(tb):
    """The same traceback minus the driver's own frames (the exec() call, the SIGINT handler)."""
    kept = []
    while tb is not None:
        if tb.tb_frame.f_globals is not _DRIVER_GLOBALS:
            kept.append(tb)
        tb = tb.tb_next
    rebuilt = None
    for entry in reversed(kept):
        rebuilt = types.TracebackType(rebuilt, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return rebuilt


def _print_exception(exc):
    """Prints a traceback of the user's code only, including chained exceptions."""
    seen = set()
    pending = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = _without_driver_frames(current.__traceback__)
        pending.extend((current.__cause__, current.__context__))
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        sys.stderr.write(text)
    except Exception:
        sys.__stderr__.write(text)


def _compile_cell(code):
    """Returns (body, last) code objects; last is None unless the cell ends in an expression."""
    _State.cells += 1
    filename = "<cell %d>" % _State.cells
    # Lets tracebacks (also later ones, from functions defined here) show the source lines.
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    tree = ast.parse(code, filename, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    body = compile(tree, filename, "exec")
    return body, (compile(last, filename, "eval") if last is not None else None)


def _shorten(text, limit):
    if len(text) <= limit:
        return text
    return text[:limit] + "... [result truncated: %d characters in total]" % len(text)


def _exit_status(exit_request):
    code = exit_request.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # like the interpreter does for sys.exit("message")
    return 1


def _run_cell(command, namespace):
    max_result_chars = int(command.get("max_result_chars", 1 << 20))
    reply = {"status": "error", "exit_code": 1, "result": None, "interrupted": False}
    try:
        body, last = _compile_cell(command["code"])
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as exc:
        sys.stderr.write("".join(traceback.format_exception_only(type(exc), exc)))
        return reply
    if signal.getsignal(signal.SIGINT) is not _on_sigint:
        signal.signal(signal.SIGINT, _on_sigint)  # user code replaced it in an earlier cell
    _UserSite.refresh()  # pip may have run since the last cell (run_shell)
    collector = _Collector(command, _State.cells)
    _Collector.current = collector if collector.max_images > 0 else None
    _State.cell_running.set()
    _State.running = True
    started = time.perf_counter()
    try:
        try:
            exec(body, namespace)
            value = eval(last, namespace) if last is not None else None
            reply["exec_ms"] = round((time.perf_counter() - started) * 1000.0, 3)
            if value is not None:
                reply["result"], extra = _rich_result(value, max_result_chars, _shorten)
                reply.update(extra)
        except KeyboardInterrupt:
            # Stopped (timeout, cancel): drawing now could outlast the agent's grace period and
            # cost the interpreter; the figures are closed unshown.
            if _Collector.current is not None:
                _close_open_figures()
            raise
        except BaseException:
            _capture_open_figures()  # as in a notebook, also when the cell failed
            raise
        _capture_open_figures()
        reply.update(status="success", exit_code=0)
    except SystemExit as exc:
        _State.running = False
        status = _exit_status(exc)
        reply.update(status="success" if status == 0 else "error", exit_code=status)
    except BaseException as exc:
        _State.running = False
        reply["interrupted"] = isinstance(exc, KeyboardInterrupt)
        _print_exception(exc)
    finally:
        _State.running = False
        _State.cell_running.clear()
        _Collector.current = None
    reply.update(collector.reply_fields())
    return reply


def _main():
    for fd in (_COMMAND_FD, _REPLY_FD):
        os.set_inheritable(fd, False)  # subprocesses of user code must not see the protocol
    _buffered_std_streams()
    _flush_before_other_processes_write()
    _start_flusher()
    _UserSite.start()
    sys.meta_path.append(_UserSiteFinder)
    commands = os.fdopen(_COMMAND_FD, "rb")
    signal.signal(signal.SIGINT, _on_sigint)

    # User code gets a fresh __main__ module, so pickle and multiprocessing find its classes.
    main_module = types.ModuleType("__main__")
    main_module.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main_module
    namespace = main_module.__dict__

    _send({"ready": True, "version": "%d.%d.%d" % sys.version_info[:3]})
    while True:
        try:
            line = commands.readline()
        except KeyboardInterrupt:
            continue
        if not line:
            break  # the agent went away
        cell = None
        try:
            command = json.loads(line)
            cell = command.get("cell")
            reply = _run_cell(command, namespace)
        except KeyboardInterrupt:  # the interrupt landed in driver code around the cell
            reply = {"status": "error", "exit_code": 1, "result": None, "interrupted": True}
        except Exception as exc:  # a malformed command: an agent bug, reported, not fatal
            sys.stderr.write("sandbox driver: cannot run the command: %r\n" % (exc,))
            reply = {"status": "error", "exit_code": 1, "result": None, "interrupted": False}
        reply["cell"] = cell
        _flush_output()
        _send(reply)
    _flush_output()
    os._exit(0)


_main()
