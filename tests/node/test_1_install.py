"""Gangway installed by its chart on a real node: its own pods run, its webhook answers
through its Service, and workloads it gangs are placed by kube-scheduler and by KAI and run.
"""

from __future__ import annotations

from typing import Any

import pytest

from gangway_localcluster.controlplane import APIError
from gangway_localcluster.kai import SCHEDULER_NAME as KAI
from tests.node.workloads import sleepers
from tests.support.realnode import (
    NAMESPACE,
    Release,
    all_ready,
    apply,
    describe,
    eventually,
    on_the_node,
    pods,
    restarts,
    succeeded,
)


def test_every_gangway_pod_runs_ready_and_both_jobs_are_done(release: Release) -> None:
    found = pods(release.cluster, NAMESPACE)
    running = [p for p in found if not succeeded(p)]
    assert all(on_the_node(p) for p in found)
    assert {p["metadata"]["name"]: restarts(p) for p in running if restarts(p)} == {}
    done = {"gangway-setup-r1": 1, "gangway-webhook-cert-r1": 1}

    def jobs() -> dict[str, int | None]:
        _, found = release.cluster.request("GET", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs")
        return {j["metadata"]["name"]: j["status"].get("succeeded") for j in found["items"]}

    # The Job controller counts a pod's success a moment after the pod has it.
    eventually(lambda: jobs() == done, "both Jobs succeeded", 30.0, lambda: str(jobs()))


def test_every_service_talks_to_the_bus_over_tls(release: Release) -> None:
    """nats-server's own report of its client connections, from each of its three nodes:
    every one is TLS (the chart's bus serves nothing else), and the services are among them."""
    connections: list[dict[str, Any]] = []
    for node in range(3):
        path = f"/api/v1/namespaces/{NAMESPACE}/pods/gangway-nats-{node}:8222/proxy/connz"
        _, report = release.cluster.request("GET", path)
        connections += report.get("connections") or []
    assert {c.get("name") for c in connections} >= {
        "gangway-watcher",
        "gangway-podgang",
        "gangway-admission",
        "gangway-backend-kai-scheduler",
    }
    assert [c for c in connections if not c.get("tls_version")] == []


def test_the_webhook_refuses_a_podcliqueset_naming_no_scheduler_through_its_service(
    release: Release,
) -> None:
    with pytest.raises(APIError) as refused:
        apply(release.cluster, "refused", sleepers("nowhere", "no-such-scheduler"))
    assert refused.value.status == 422
    assert 'webhook "podcliquesets.gangway.dev" denied' in str(refused.value)
    assert 'schedulerName: "no-such-scheduler" is not an enabled' in str(refused.value)


@pytest.mark.parametrize("scheduler", ["default-scheduler", KAI])
def test_a_podcliqueset_runs_on_the_node_placed_by_its_scheduler(
    release: Release, scheduler: str
) -> None:
    namespace = f"placed-{scheduler}"
    apply(release.cluster, namespace, sleepers("sleepers", scheduler))
    found = eventually(
        lambda: all_ready(release.cluster, namespace),
        f"PodCliqueSet on {scheduler} running",
        diagnose=lambda: describe(release.cluster, namespace),
    )
    assert len(found) == 2
    assert all(on_the_node(p) and p["spec"]["schedulerName"] == scheduler for p in found)
