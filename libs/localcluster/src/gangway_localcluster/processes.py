"""Child processes that never outlive us, and commands run to their end (:func:`run`).

Each child runs in its own process group (so one signal stops it and anything it forked),
asks the kernel to kill it when its parent dies (PR_SET_PDEATHSIG: covers a SIGKILLed test
run), and is stopped at interpreter exit and on SIGTERM/SIGHUP. Start children from the
main thread: the death signal follows the thread that forked them.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any, Final, Self

_PR_SET_PDEATHSIG: Final = 1
_running: list[Child] = []
# Clean-ups of what owns the children (temp dirs): run by stop_all, so a signal that lands
# before the owner's own try/finally still leaves nothing behind.
_cleanups: list[Callable[[], None]] = []


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class Child:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    _stopped: bool = field(default=False, repr=False)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self.alive():
            try:
                os.killpg(self.popen.pid, signal.SIGTERM)
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
            except ProcessLookupError:
                pass
        if self in _running:
            _running.remove(self)

    def kill(self) -> None:
        """SIGKILL the child's whole group and reap it: a crash, nothing cleaned up."""
        self._stopped = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait()
        if self in _running:
            _running.remove(self)


@dataclass(kw_only=True)
class Supervised:
    """Something that owns child processes and a working directory: stopped together, once,
    by ``stop()``, by ``with``, or by ``stop_all`` on exit and signals."""

    workdir: Path
    _children: list[Child] = field(default_factory=list, repr=False)
    _owns_workdir: bool = True

    def __post_init__(self) -> None:
        on_stop(self.stop)

    def pids(self) -> dict[str, int]:
        """Process id of each child still running, by name (for measuring from outside)."""
        return {c.name: c.popen.pid for c in self._children if c.alive()}

    def child(self, name: str) -> Child:
        """The child started as ``name`` (StopIteration if none is)."""
        return next(c for c in self._children if c.name == name)

    def adopt(self, child: Child) -> None:
        """A child started elsewhere, from now on stopped with these."""
        self._children.append(child)

    def kill_child(self, name: str) -> None:
        """SIGKILL the child ``name``, as a crash or an OOM kill would end it, and forget it."""
        child = self.child(name)
        child.kill()
        self._children.remove(child)

    def stop(self) -> None:
        cancel_on_stop(self.stop)
        for child in reversed(self._children):
            child.stop()
        self._children.clear()
        if self._owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def start(
    name: str,
    args: Sequence[str | Path],
    log: Path,
    env: Mapping[str, str] | None = None,
    max_log_bytes: int | None = None,
) -> Child:
    """Start ``args`` writing to ``log``; with ``max_log_bytes`` the log is rotated once
    (``log`` and ``log.1``) so a chatty child never holds more than twice that on disk."""
    _install_handlers()
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        popen = subprocess.Popen(
            [str(a) for a in args],
            stdin=subprocess.DEVNULL,
            stdout=out if max_log_bytes is None else subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=None if env is None else dict(env),
            start_new_session=True,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - only prctl, no locks taken
        )
    if max_log_bytes is not None and popen.stdout is not None:
        copier = threading.Thread(
            target=_copy_capped, args=(popen.stdout, log, max_log_bytes), daemon=True
        )
        copier.start()
    child = Child(name, popen, log)
    _running.append(child)
    return child


def _copy_capped(source: IO[bytes], log: Path, limit: int) -> None:
    """Copy a child's output to ``log``; past ``limit`` bytes the log becomes ``log.1``
    (replacing the older one) and a new ``log`` starts."""
    out = log.open("ab")
    written = out.tell()
    try:
        for line in iter(source.readline, b""):
            if written + len(line) > limit:
                out.close()
                os.replace(log, log.with_name(log.name + ".1"))
                out, written = log.open("ab"), 0
            out.write(line)
            out.flush()
            written += len(line)
    finally:
        out.close()
        source.close()


def run(
    args: Sequence[str | Path],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """Run ``args`` to the end; its output, or a RuntimeError with the end of what it said
    on stderr (a bare CalledProcessError would hide why)."""
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        where = f" in {cwd}" if cwd else ""
        raise RuntimeError(
            f"{' '.join(str(a) for a in args)} failed ({done.returncode}){where}:\n"
            f"{done.stderr[-4000:]}"
        )
    return done.stdout


def on_stop(cleanup: Callable[[], None]) -> None:
    """Run ``cleanup`` when everything is stopped (exit, SIGTERM, SIGHUP), unless cancelled."""
    _install_handlers()
    _cleanups.append(cleanup)


def cancel_on_stop(cleanup: Callable[[], None]) -> None:
    if cleanup in _cleanups:
        _cleanups.remove(cleanup)


def stop_all() -> None:
    """Stop every child still running, newest first (dependents before what they need),
    then run the registered clean-ups, newest first."""
    for child in reversed(list(_running)):
        child.stop()
    for cleanup in reversed(list(_cleanups)):
        cleanup()


_handlers_installed = False


def _install_handlers() -> None:
    global _handlers_installed  # noqa: PLW0603 - one registration per interpreter
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(stop_all)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        previous = signal.getsignal(signum)

        def handler(sig: int, frame: FrameType | None, previous: Any = previous) -> None:
            stop_all()
            if callable(previous):
                previous(sig, frame)
            else:
                raise SystemExit(128 + sig)

        # Only the main thread may set handlers; elsewhere atexit and the death signal do.
        with contextlib.suppress(ValueError):
            signal.signal(signum, handler)


def free_port() -> int:
    """A free loopback TCP port (the kernel's choice); callers retry if it is taken meanwhile."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_until(ready: Callable[[], bool], child: Child, what: str, timeout: float = 60.0) -> None:
    """Poll ``ready`` until true; fail with the child's log when it dies or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not child.alive():
            raise RuntimeError(
                f"{child.name} exited ({child.popen.returncode}) before {what}:\n{child.log_tail()}"
            )
        if ready():
            return
        time.sleep(0.1)
    raise TimeoutError(f"{child.name}: no {what} after {timeout:.0f}s:\n{child.log_tail()}")


def http_ok(url: str, context: Any = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False
