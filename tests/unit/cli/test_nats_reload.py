"""nats-reload's parts: a change of the watched files is seen, and the server named by the
pid file gets SIGHUP (here a child that reports it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gangway_cli.nats_reload import digest, reload_server

# Says "reloaded" on SIGHUP, as nats-server reloads its configuration.
_SERVER = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGHUP, lambda *_: (print('reloaded', flush=True), sys.exit(0)))\n"
    "print('up', flush=True)\n"
    "time.sleep(60)\n"
)


def test_a_changed_or_missing_file_changes_the_digest(tmp_path: Path) -> None:
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    assert digest([cert, key]) is None
    cert.write_text("one")
    key.write_text("key")
    first = digest([cert, key])
    assert first is not None
    assert digest([cert, key]) == first
    cert.write_text("two")
    assert digest([cert, key]) not in (None, first)


def test_the_server_of_the_pid_file_is_told_to_reload(tmp_path: Path) -> None:
    pid_file = tmp_path / "nats.pid"
    assert not reload_server(pid_file)  # not started yet
    server = subprocess.Popen([sys.executable, "-c", _SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        assert server.stdout.readline() == "up\n"
        pid_file.write_text(f"{server.pid}\n")
        assert reload_server(pid_file)
        assert server.stdout.readline() == "reloaded\n"
        assert server.wait(timeout=10) == 0
    finally:
        server.kill()
        server.wait()
    assert not reload_server(pid_file)  # gone
