"""The commands that talk to a server say in one line when they cannot reach it: no
traceback, exit 1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def gangway(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gangway_cli.main", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env=env,
    )


def test_trace_with_nats_unreachable() -> None:
    done = gangway("trace", "ml/trainer", "--nats-url=nats://127.0.0.1:1")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "NATS at nats://127.0.0.1:1: nats: no servers available for connection"
    ]


@pytest.mark.parametrize("kubeconfig", ["", "apiVersion: v1\nkind: Config\n"])
@pytest.mark.parametrize("command", [("demo",), ("why", "ml/trainer")])
def test_a_kubeconfig_it_cannot_use(
    tmp_path: Path, kubeconfig: str, command: tuple[str, ...]
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(kubeconfig)
    done = gangway(*command, f"--kubeconfig={path}")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"{command[0]}: "), line
