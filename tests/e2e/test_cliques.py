"""PodCliques and PodCliqueScalingGroups with the numbers Grove's columns show, once the
default scheduler (gang scheduling on) has placed Grove's discovery sample on kwok nodes and
kwok runs its pods: every clique scheduled and ready, no minimum breached, every group
replica available. Read back through the columns of the CRDs `kubectl get` prints."""

from __future__ import annotations

import subprocess
from functools import partial
from typing import Any

from kubernetes_asyncio.client.api_client import ApiClient

from gangway_localcluster.controlplane import ControlPlane
from tests.e2e.conftest import Nodes
from tests.integration.watcher.conftest import labelled
from tests.support.kube import server_side_apply
from tests.support.manifests import fixture
from tests.support.podgang import condition, objects
from tests.support.store import eventually

CONFIG = {
    "profiles": [{"name": "default-scheduler", "default": True, "config": {"gangScheduling": True}}]
}
SAMPLE = "grove/samples/user-guide/03_environment-variables-for-pod-discovery/pcsg-env-vars.yaml"
PODCLIQUES = "/apis/grove.io/v1alpha1/namespaces/{ns}/podcliques"
SCALING_GROUPS = "/apis/grove.io/v1alpha1/namespaces/{ns}/podcliquescalinggroups"
RUNNING_WITHIN = 120.0


def kubectl(cp: ControlPlane, *args: str) -> str:
    """The control plane's own kubectl, as a user runs it."""
    done = subprocess.run(
        [cp.binaries.kubectl, f"--kubeconfig={cp.kubeconfig}", *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def columns(cp: ControlPlane, plural: str, namespace: str) -> list[dict[str, str]]:
    """What `kubectl get <plural> -o wide` prints, by column (the CRD's printer columns)."""
    out = kubectl(cp, "get", plural, "-n", namespace, "-o", "wide")
    header, *rows = out.splitlines()
    names = header.split()
    return [dict(zip(names, row.split(), strict=False)) for row in rows]


def all_running(found: dict[str, dict[str, Any]]) -> bool:
    return len(found) == 4 and all(
        (c.get("status") or {}).get("readyReplicas") == c["spec"]["replicas"]
        and condition(c, "MinAvailableBreached").get("status") == "False"
        for c in found.values()
    )


async def test_podcliques_and_scaling_groups_show_grove_s_numbers(
    api: ApiClient, namespace: str, nodes: Nodes, e2e_cluster: ControlPlane
) -> None:
    await nodes.add(2, gpus=0)
    pcs = nodes.pin(labelled(fixture(SAMPLE), namespace, "serving"))
    await server_side_apply(api, pcs, namespace)
    cliques = await eventually(
        partial(objects, api, namespace, PODCLIQUES), all_running, RUNNING_WITHIN
    )
    for clique in cliques.values():
        status = clique["status"]
        replicas = clique["spec"]["replicas"]
        assert (status["scheduledReplicas"], status["scheduleGatedReplicas"]) == (replicas, 0)
        assert condition(clique, "PodCliqueScheduled")["status"] == "True"
    group = "serving-0-model-instance"
    groups = await eventually(
        partial(objects, api, namespace, SCALING_GROUPS),
        lambda g: (g.get(group, {}).get("status") or {}).get("availableReplicas") == 2,
        RUNNING_WITHIN,
    )
    assert groups[group]["status"]["scheduledReplicas"] == 2
    assert condition(groups[group], "MinAvailableBreached")["status"] == "False"

    printed = {row["NAME"]: row for row in columns(e2e_cluster, "pclq", namespace)}
    assert printed[f"{group}-1-worker"] | {"AGE": ""} == {
        "NAME": f"{group}-1-worker",
        "MINAVAIL": "3",
        "REPLICAS": "3",
        "READY": "3",
        "SCHEDULED": "3",
        "UPDATED": "3",
        "GATED": "0",
        "MINBREACHED": "False",
        "AGE": "",
    }
    [row] = columns(e2e_cluster, "pcsg", namespace)
    assert (row["NAME"], row["REPLICAS"], row["AVAILABLE"], row["SCHEDULED"]) == (
        group,
        "2",
        "2",
        "2",
    )
