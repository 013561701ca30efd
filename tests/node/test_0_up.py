"""`gangway up --node`, as the README and docs/operations.md suggest rehearsing the chart: the
commands it prints, run as printed in the shell it describes, install Gangway on the real
node and place a sample through it; Ctrl-C takes the node away. First of the suite: it
holds the machine's one real node only while it runs."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gangway_localcluster.realnode import NETNS, NODE_NAME
from tests.support.paths import REPO
from tests.support.realnode import READY_WITHIN

SAMPLE = "cli/src/gangway_cli/samples/default-scheduler.yaml"


def test_the_chart_rehearsed_on_up_s_real_node_runs_a_sample(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the real node needs root: a network namespace, containerd, the kubelet")
    ready, log = tmp_path / "ready.env", tmp_path / "up.log"
    with log.open("w") as out:
        up = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "gangway"),
                *("up", "--node", "--nodes", "2", "--ready-file", str(ready)),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )
    try:
        _wait(lambda: ready.exists() or up.poll() is not None, "up ready", log)
        assert up.poll() is None, log.read_text()
        env = {**os.environ, **dict(line.split("=", 1) for line in ready.read_text().split())}
        printed = log.read_text().splitlines()
        (install,) = [line.strip() for line in printed if line.strip().startswith("helm install")]

        def run(command: list[str]) -> str:
            done = subprocess.run(
                command, env=env, cwd=REPO, capture_output=True, text=True, check=False
            )
            assert done.returncode == 0, f"{shlex.join(command)}: {done.stdout}{done.stderr}"
            return done.stdout

        run(shlex.split(install))
        for deployment in ("podgang", "watcher", "admission", "backend-kube", "backend-kai"):
            run(
                [
                    *("kubectl", "-n", "gangway-system", "rollout", "status"),
                    *(f"deployment/gangway-{deployment}", f"--timeout={READY_WITHIN:.0f}s"),
                ]
            )
        nodes = run(
            [
                *("kubectl", "-n", "gangway-system", "get", "pods"),
                *("-o", "jsonpath={.items[*].spec.nodeName}"),
            ]
        )
        assert set(nodes.split()) == {NODE_NAME}, nodes
        run(["kubectl", "apply", "--server-side", "-f", SAMPLE])
        # Every gang placed, as the PodCliqueSet says it (kwok's two nodes hold both).
        run(
            [
                *("kubectl", "wait", "podcliqueset/demo-trainer"),
                *("--for=condition=PodGangsScheduled", f"--timeout={READY_WITHIN:.0f}s"),
            ]
        )
    finally:
        up.send_signal(signal.SIGINT)
        code = up.wait(timeout=120)
    assert code == 0, log.read_text()[-3000:]
    assert not Path(f"/run/netns/{NETNS}").exists(), "the node's namespace outlived up"


def _wait(done: Callable[[], bool], what: str, log: Path, within: float = 600.0) -> None:
    """Until ``done()`` (a cold first run builds the node's images: minutes)."""
    deadline = time.monotonic() + within
    while not done():
        assert time.monotonic() < deadline, f"{what}: not within {within}s\n{log.read_text()}"
        time.sleep(0.5)
