"""The local schedulers a first run has not built yet, built while the cluster already runs.

A cold ``gangway up`` used to build every scheduler before anything started (~18 min on 2
cores). Now the control plane, kube-scheduler and Gangway start as soon as Kubernetes is
built, with every backend enabled (their CRDs come from module downloads, not builds); the
schedulers missing from the cache are built one after another in a child process (so that
Ctrl-C stops a build at once) and each starts as soon as it is built. Until then a
PodCliqueSet naming it is made and waits, gates lifted, for its scheduler: its
PodGangsScheduled condition says PodsPending.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Final

from gangway_localcluster.controlplane import LOCAL_SCHEDULERS, ControlPlane

NICEST: Final = ("nice", "-n", "19")  # a build waits for the cluster, never the other way


class LateSchedulers:
    """Builds and starts ``waiting`` (backend → the schedulerName it serves), in order."""

    def __init__(
        self, cp: ControlPlane, waiting: Mapping[str, str], say: Callable[[str], None]
    ) -> None:
        self.cp = cp
        self.waiting = dict(waiting)
        self.say = say
        self._stopping = threading.Event()
        self._child: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="late-schedulers", daemon=True)

    def start(self) -> None:
        if self.waiting:
            self._thread.start()

    def pending(self) -> list[str]:
        """The backends whose scheduler is not running yet."""
        with self._lock:
            return list(self.waiting)

    def stop(self) -> None:
        """No more builds: the one under way interrupted (it removes its half-built files;
        Go's cache keeps what it finished), killed if it does not end within seconds."""
        self._stopping.set()
        with self._lock:
            child = self._child
        if child is not None and child.poll() is None:
            os.killpg(child.pid, signal.SIGINT)
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        try:
            self._build_and_start()
        finally:
            # The schedulers started here die with the thread that started them (their
            # parent-death signal follows the forking thread): it lives as long as they do.
            self._stopping.wait()

    def _build_and_start(self) -> None:
        for backend, name in list(self.waiting.items()):
            if self._stopping.is_set():
                return
            local = LOCAL_SCHEDULERS[backend]
            started = time.monotonic()
            if not self._build(backend):
                continue
            try:
                local.start_on(self.cp, name)
            except (RuntimeError, TimeoutError, OSError) as exc:
                self.say(f"{local.title} did not start: {exc}")
                continue
            with self._lock:
                del self.waiting[backend]
            took = time.monotonic() - started
            self.say(f"{local.title} built in {took:.0f}s and running, as {name}")
        if not self._stopping.is_set() and not self.pending():
            self.say("every scheduler runs: gangway demo places all six samples")

    def _build(self, backend: str) -> bool:
        """One scheduler built by a child process (its progress lines are printed as they
        come); whether it was."""
        child = subprocess.Popen(
            [*NICEST, sys.executable, "-m", "gangway_localcluster", "--scheduler", backend],
            stdout=subprocess.DEVNULL,  # the binary's path; its progress goes to stderr
            stderr=None,
            start_new_session=True,  # its own process group: killed whole, go build too
        )
        with self._lock:
            self._child = child
        code = child.wait()
        if code != 0 and not self._stopping.is_set():
            self.say(f"{LOCAL_SCHEDULERS[backend].title}: its build failed (exit {code})")
        return code == 0 and not self._stopping.is_set()
