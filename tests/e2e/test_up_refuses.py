"""``gangway up --kubeconfig`` refuses, saying why, where running would do harm or cannot work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gangway_cli.cluster import WEBHOOK_CONFIGURATIONS, WEBHOOK_NAME
from gangway_localcluster.controlplane import ControlPlane

GANGWAY = str(Path(sys.executable).parent / "gangway")


def up(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [GANGWAY, "up", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_a_cluster_where_gangway_is_installed(e2e_cluster: ControlPlane) -> None:
    installed = {  # as deploy/ would leave it; no webhooks, so nothing else here is judged
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK_NAME},
        "webhooks": [],
    }
    e2e_cluster.request("POST", WEBHOOK_CONFIGURATIONS.path(), installed)
    try:
        done = up(f"--kubeconfig={e2e_cluster.kubeconfig}")
    finally:
        e2e_cluster.request("DELETE", WEBHOOK_CONFIGURATIONS.path(name=WEBHOOK_NAME))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Gangway seems installed in this cluster already" in done.stderr


def test_a_cluster_it_cannot_reach(tmp_path: Path, e2e_cluster: ControlPlane) -> None:
    unreachable = tmp_path / "kubeconfig"
    text = e2e_cluster.kubeconfig.read_text()
    unreachable.write_text(text.replace(e2e_cluster.server, "https://127.0.0.1:1"))
    done = up(f"--kubeconfig={unreachable}")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith(f"up: the cluster of {unreachable}: ")


def test_a_webhook_host_without_a_cluster_to_register_in() -> None:
    done = up("--webhook-host=10.0.0.1")
    assert done.returncode == 2
    assert "--webhook-host goes with --kubeconfig" in done.stderr
