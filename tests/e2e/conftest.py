"""End to end: every Gangway service as its own process, started by
``gangway up --kubeconfig`` against a control plane of these tests' own (the watcher mirrors
the whole cluster, so it cannot share the integration tests' one) and a real nats-server.

The control plane starts without Gangway's CRDs: ``up`` installs them. KAI's scheduler and
binder run in it too (they act only on pods that name kai-scheduler), scheduler-plugins'
Coscheduling scheduler (only pods that name scheduler-plugins-scheduler), Koordinator's
koord-scheduler (only pods that name koord-scheduler) and Volcano's vc-scheduler (only pods
that name volcano). Each test module names the operator configuration ``up`` runs with
(``CONFIG``), and gets its own ``up``. kube-scheduler and kwok run in it: a test that needs
room adds fake nodes of its own (``nodes``) and pins its pods to them, so no test's pods take
another test's room.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio.client.api_client import ApiClient

from gangway_cli.cluster import CRDS, WEBHOOK_CONFIGURATIONS, WEBHOOK_NAME
from gangway_localcluster.controlplane import LOCAL_SCHEDULERS, APIError, ControlPlane
from gangway_localcluster.crds import CLUSTER_TOPOLOGY_BINDINGS
from gangway_localcluster.nodes import NodePool
from tests.support.kube import admin_client

UP_WITHIN = 180.0
POOL_LABEL = "gangway.dev/test-pool"
GANGWAY_CRDS = (  # as up names them: by file name
    "podcliques.grove.io",
    "podcliquescalinggroups.grove.io",
    "podcliquesets.grove.io",
    "podgangs.scheduler.grove.io",
)


@pytest.fixture(scope="session")
def e2e_cluster() -> Iterator[ControlPlane]:
    with ControlPlane.start(
        crds=[CLUSTER_TOPOLOGY_BINDINGS],
        scheduling=True,
        schedulers={s.backend: s.scheduler_name for s in LOCAL_SCHEDULERS.values()},
    ) as cp:
        yield cp


@dataclass
class Nodes:
    """A test's own fake nodes: labelled with its pool, which its pods select."""

    cluster: ControlPlane
    pool: str
    made: int = 0

    @property
    def selector(self) -> dict[str, str]:
        return {POOL_LABEL: self.pool}

    async def add(self, count: int, gpus: int = 4) -> list[str]:
        pool = NodePool(
            count=count, gpus=gpus, prefix=self.pool, first=self.made, labels=self.selector
        )
        self.made += count
        return await asyncio.to_thread(self.cluster.add_nodes, pool)

    def pin(self, pcs: dict[str, Any]) -> dict[str, Any]:
        """Every clique's pods on this test's nodes only."""
        for clique in pcs["spec"]["template"]["cliques"]:
            clique["spec"]["podSpec"]["nodeSelector"] = self.selector
        return pcs


@pytest.fixture
def nodes(e2e_cluster: ControlPlane) -> Nodes:
    """Nodes stay for the session (kwok keeps them for nothing): deleting a node before the
    test's namespace would leave its pods Terminating, with nothing to finish them."""
    return Nodes(e2e_cluster, f"n{uuid.uuid4().hex[:8]}")


@dataclass(frozen=True)
class Up:
    """A running ``gangway up``: its environment and what it printed."""

    env: dict[str, str]
    log: Path

    @property
    def output(self) -> str:
        return self.log.read_text()


@pytest.fixture(scope="module")
def up(
    e2e_cluster: ControlPlane,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Up]:
    """``gangway up --kubeconfig`` with the module's ``CONFIG`` (its ``OPERATOR``: a whole
    operator configuration); Ctrl-C after its tests, which must end it cleanly and take its
    webhook registration away. A module whose configuration enables Kueue has Kueue's
    manager started in the cluster first (once, kept for the session)."""
    workdir = tmp_path_factory.mktemp("up")
    config, ready, log = workdir / "operator.yaml", workdir / "ready.env", workdir / "up.log"
    operator = getattr(request.module, "OPERATOR", {"scheduler": request.module.CONFIG})
    if operator.get("kueue", {}).get("enabled"):
        e2e_cluster.start_kueue()
    config.write_text(yaml.safe_dump(operator))
    command = [
        str(Path(sys.executable).parent / "gangway"),
        "up",
        f"--kubeconfig={e2e_cluster.kubeconfig}",
        "--webhook-host=127.0.0.1",
        f"--config={config}",
        f"--ready-file={ready}",
    ]
    missing = [name for name in GANGWAY_CRDS if _get(e2e_cluster, CRDS.path(name=name)) is None]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=os.environ)
    try:
        deadline = time.monotonic() + UP_WITHIN
        while not ready.exists():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        env = dict(line.split("=", 1) for line in ready.read_text().splitlines())
        # What the cluster lacked, up installed; what it had, it left alone.
        assert f"Gangway CRDs installed: {', '.join(missing) or 'none needed'}" in log.read_text()
        yield Up(env, log)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            code = process.wait(60)
        except subprocess.TimeoutExpired:  # never leave it running: its children die with it
            process.kill()
            process.wait()
            raise AssertionError(
                f"up ignored Ctrl-C for 60 s; killed:\n{log.read_text()}"
            ) from None
    assert code == 0, log.read_text()
    assert "stopping…" in log.read_text()
    registration = WEBHOOK_CONFIGURATIONS.path(name=WEBHOOK_NAME)
    assert _get(e2e_cluster, registration) is None, "the webhook registration outlived up"


def _get(cp: ControlPlane, path: str) -> Any:
    try:
        return cp.request("GET", path)[1]
    except APIError as exc:
        if exc.status == 404:
            return None
        raise


@pytest.fixture
async def api(e2e_cluster: ControlPlane, up: Up) -> AsyncIterator[ApiClient]:
    async with admin_client(e2e_cluster.kubeconfig) as api_client:
        yield api_client
