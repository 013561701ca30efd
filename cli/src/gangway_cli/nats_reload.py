"""``gangway deploy nats-reload``: beside nats-server in its pod, tell it to reload its
configuration when its certificate changes.

nats-server reads its certificate only when it starts or reloads (SIGHUP). A renewed one
(the self-signed CronJob's, or cert-manager's) reaches the pod's files within a minute;
without a reload the server would keep serving the old one until it expired. The pod shares
one process namespace, so the pid in nats-server's pid file is one this process can signal.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

CHECK_EVERY_SECONDS = 30.0


def digest(files: Iterable[Path]) -> str | None:
    """One digest of the files' contents; None while one is missing."""
    sha = hashlib.sha256()
    try:
        for file in files:
            sha.update(file.read_bytes())
    except FileNotFoundError:
        return None
    return sha.hexdigest()


def reload_server(pid_file: Path) -> bool:
    """SIGHUP to the nats-server of ``pid_file``; False when it is not running."""
    try:
        os.kill(int(pid_file.read_text().strip()), signal.SIGHUP)
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return False
    return True


def watch(files: list[Path], pid_file: Path, every: float = CHECK_EVERY_SECONDS) -> None:
    """For ever: on a change of ``files``, reload the server (again next round if it was
    not running: a restarting server reads the new files anyway)."""
    seen = digest(files)
    while True:
        time.sleep(every)
        now = digest(files)
        if now is None or now == seen:
            continue
        if reload_server(pid_file):
            print(f"{', '.join(map(str, files))} changed: nats-server reloaded", flush=True)
            seen = now


def add_arguments(reload: argparse.ArgumentParser) -> None:
    reload.add_argument("--pid-file", type=Path, required=True, help="nats-server's pid_file")
    reload.add_argument(
        "--watch", type=Path, action="append", required=True, help="a file to watch (repeatable)"
    )
    reload.add_argument("--every", type=float, default=CHECK_EVERY_SECONDS, help="seconds")
    reload.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    print(f"watching {', '.join(map(str, args.watch))} every {args.every:g}s", flush=True)
    watch(args.watch, args.pid_file, args.every)
    return 0
