"""Gangway installed on the real node by its Helm chart, and what the real-node tests ask of
the cluster: pods, their logs, a PodCliqueSet applied through the webhook. Plain admin
requests (``ControlPlane.request``): nothing here goes around the API server."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

import yaml

from gangway_localcluster.controlplane import APIError, ControlPlane
from gangway_localcluster.helm import ensure_helm
from gangway_localcluster.realnode import NODE_NAME, PODS_CGROUP, RealNode
from tests.support.chart import CHART
from tests.support.podgang import condition

NAMESPACE: Final = "gangway-system"
RELEASE: Final = "gangway"
SMALL_PROFILE: Final = CHART / "values-small.yaml"
NATS_REPLICAS: Final = 3
READY_WITHIN: Final = 180.0
PCS_PATH: Final = "/apis/grove.io/v1alpha1/namespaces/{ns}/podcliquesets"

T = TypeVar("T")


@dataclass(frozen=True)
class Release:
    node: RealNode
    values: Path  # the values it was installed with, beside the small profile

    @property
    def cluster(self) -> ControlPlane:
        return self.node.control_plane

    def helm(self, *args: str) -> None:
        self._run(ensure_helm(), *args)

    def kubectl(self, *args: str) -> None:
        self._run(self.cluster.binaries.kubectl, *args)

    def _run(self, binary: Path, *args: str) -> None:
        """``binary args`` against the node's cluster; fails with what it said."""
        done = subprocess.run(
            [str(binary), *args, "--kubeconfig", str(self.cluster.kubeconfig)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, f"{binary.name} {args[0]}: {done.stderr[-3000:]}"


def eventually(
    probe: Callable[[], T | None],
    what: str,
    within: float = READY_WITHIN,
    diagnose: Callable[[], str] = lambda: "",
) -> T:
    """``probe()`` once it is truthy; fails naming ``what`` with ``diagnose()`` after
    ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {within:.0f}s\n{diagnose()}")
        time.sleep(0.5)


def pods(cluster: ControlPlane, namespace: str, selector: str = "") -> list[dict[str, Any]]:
    query = f"?labelSelector={selector}" if selector else ""
    _, found = cluster.request("GET", f"/api/v1/namespaces/{namespace}/pods{query}")
    items: list[dict[str, Any]] = found["items"]
    return items


def is_ready(pod: dict[str, Any]) -> bool:
    return condition(pod, "Ready").get("status") == "True"


def succeeded(pod: dict[str, Any]) -> bool:
    return bool(pod.get("status", {}).get("phase") == "Succeeded")


def restarts(pod: dict[str, Any]) -> int:
    return sum(s.get("restartCount", 0) for s in pod["status"].get("containerStatuses", []))


def log(cluster: ControlPlane, namespace: str, pod: str, container: str = "") -> str:
    """The container's log, read from the kubelet through the API server."""
    query = f"?container={container}" if container else ""
    try:
        _, text = cluster.request("GET", f"/api/v1/namespaces/{namespace}/pods/{pod}/log{query}")
    except APIError as exc:
        return f"(no log: {exc})"
    return str(text)


def describe(cluster: ControlPlane, namespace: str) -> str:
    """Each pod's phase, readiness, restarts and the namespace's warnings: what a failed
    wait shows."""
    lines = []
    for pod in pods(cluster, namespace):
        status = pod.get("status", {})
        waiting = [
            f"{s['name']}: {s['state']}"
            for s in status.get("containerStatuses", []) + status.get("initContainerStatuses", [])
            if "running" not in s.get("state", {})
        ]
        lines.append(
            f"{pod['metadata']['name']}: {status.get('phase')} ready={is_ready(pod)} "
            f"restarts={restarts(pod) if 'containerStatuses' in status else '-'} {waiting}"
        )
    _, events = cluster.request("GET", f"/api/v1/namespaces/{namespace}/events")
    lines += [
        f"event {e['involvedObject']['name']}: {e['reason']}: {e['message']}"
        for e in events["items"]
        if e["type"] == "Warning"
    ][-20:]
    return "\n".join(lines)


def all_ready(cluster: ControlPlane, namespace: str) -> list[dict[str, Any]] | None:
    """The namespace's pods once each is Ready or done (a Job's), else None."""
    found = pods(cluster, namespace)
    if found and all(is_ready(p) or succeeded(p) for p in found):
        return found
    return None


def install(node: RealNode, workdir: Path) -> Release:
    """``helm install`` the checkout's chart with the small profile and the images built
    from the checkout; returns once every pod is Ready and both Jobs are done."""
    values = workdir / "values.yaml"
    values.write_text(yaml.safe_dump(node.chart_values()))
    release = Release(node, values)
    node.host_volumes("gangway-test-nats", NATS_REPLICAS)  # the NATS servers' claims
    release.helm(
        *("install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--create-namespace"),
        *("--values", str(SMALL_PROFILE), "--values", str(values)),
    )
    cluster = node.control_plane
    eventually(
        lambda: installed(cluster),
        "Gangway pod Ready on the node",
        diagnose=lambda: describe(cluster, NAMESPACE),
    )
    return release


DEPLOYMENTS: Final = (
    "gangway-watcher",
    "gangway-podgang",
    "gangway-admission",
    "gangway-backend-kai",
    "gangway-backend-kube",
)


def installed(cluster: ControlPlane) -> bool:
    """Every pod Ready or done, one of each Deployment's among them, the NATS servers."""
    found = all_ready(cluster, NAMESPACE) or []
    names = [p["metadata"]["name"] for p in found if is_ready(p)]
    deployments = {name.rsplit("-", 2)[0] for name in names}
    nats = [name for name in names if name.startswith("gangway-nats-")]
    return set(DEPLOYMENTS) <= deployments and len(nats) == NATS_REPLICAS


def apply(cluster: ControlPlane, namespace: str, pcs: dict[str, Any]) -> dict[str, Any]:
    """Create the PodCliqueSet through the API server (and so through the webhook)."""
    cluster.create(
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
    )
    _, created = cluster.request("POST", PCS_PATH.format(ns=namespace), pcs)
    result: dict[str, Any] = created
    return result


def on_the_node(pod: dict[str, Any]) -> bool:
    return bool(pod["spec"].get("nodeName") == NODE_NAME)


def kill_container(pod: dict[str, Any], container: str) -> None:
    """SIGKILL every process of the pod's ``container``, found by its cgroup on the node:
    what an OOM kill or a crash does; the kubelet restarts it."""
    (status,) = (s for s in pod["status"]["containerStatuses"] if s["name"] == container)
    container_id = status["containerID"].removeprefix("containerd://")
    pods_root = Path("/sys/fs/cgroup/memory") / PODS_CGROUP
    (group,) = pods_root.rglob(container_id)
    for pid in (group / "cgroup.procs").read_text().split():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)


def workload_sets(cluster: ControlPlane) -> dict[str, str]:
    """Every PodCliqueSet, namespace/name → uid: what removing Gangway must keep."""
    return _by_uid(cluster, "/apis/grove.io/v1alpha1/podcliquesets")


def workload_pods(cluster: ControlPlane) -> dict[str, str]:
    """Every pod outside Gangway's namespace, name → uid: what an upgrade must not touch."""
    return _by_uid(cluster, "/api/v1/pods")


def _by_uid(cluster: ControlPlane, path: str) -> dict[str, str]:
    _, found = cluster.request("GET", path)
    return {
        f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["metadata"]["uid"]
        for p in found["items"]
        if p["metadata"]["namespace"] != NAMESPACE
    }
