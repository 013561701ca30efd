"""Stopping leaves nothing behind: no process, no port, no temp dir — even when killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gangway_localcluster import build

# A stand-in for a test run or `gangway up`: starts everything, reports, then waits.
# Ctrl-C as a terminal would deliver it, even when this suite runs in the background (where
# a non-interactive shell leaves SIGINT ignored for every child).
SCRIPT = """
import json, os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.nats import NatsServer
from gangway_localcluster import processes
nats = NatsServer.start()
cp = ControlPlane.start()
pids = [c.popen.pid for c in processes._running]
print(json.dumps({"pids": pids, "dirs": [str(cp.workdir), str(nats.workdir)]}), flush=True)
try:
    time.sleep(600)
finally:
    cp.stop()
    nats.stop()
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0): check its state.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def launch() -> tuple[subprocess.Popen[str], list[int], list[Path]]:
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    report = json.loads(proc.stdout.readline())
    assert len(report["pids"]) == 4  # nats-server, etcd, kube-apiserver, controller-manager
    return proc, report["pids"], [Path(d) for d in report["dirs"]]


def wait_gone(pids: list[int], timeout: float = 20) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stopping_cleans_up(sig: signal.Signals) -> None:
    build.ensure_binaries()
    proc, pids, dirs = launch()
    proc.send_signal(sig)
    proc.wait(30)
    assert wait_gone(pids) == []
    assert [d for d in dirs if d.exists()] == []


def test_children_die_with_a_killed_parent() -> None:
    proc, pids, dirs = launch()
    proc.kill()  # no handler, no atexit: only the kernel's parent-death signal is left
    proc.wait(30)
    assert wait_gone(pids) == []
    for d in dirs:  # a SIGKILLed parent cannot remove its temp dirs; we do it for it
        subprocess.run(["rm", "-rf", str(d)], check=True)
