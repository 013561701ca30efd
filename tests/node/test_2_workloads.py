"""A workload's containers on the real node: a worker finds its leader from Grove's
variables through CoreDNS and talks to it; a clique that starts after another starts once
that one is ready."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from gangway_contracts.labels import PODCLIQUE
from gangway_podgang.startup import INIT_CONTAINER
from tests.node.workloads import leader_and_worker
from tests.support.podgang import condition
from tests.support.realnode import (
    Release,
    all_ready,
    apply,
    describe,
    eventually,
    log,
)

NAMESPACE = "discovery"


@pytest.fixture(scope="module")
def running(release: Release) -> list[dict[str, Any]]:
    apply(release.cluster, NAMESPACE, leader_and_worker("serve"))
    return eventually(
        lambda: _three_ready(release),
        "leader and workers ready",
        diagnose=lambda: describe(release.cluster, NAMESPACE),
    )


def _three_ready(release: Release) -> list[dict[str, Any]] | None:
    found = all_ready(release.cluster, NAMESPACE)
    return found if found and len(found) == 3 else None


def role(found: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [p for p in found if p["metadata"]["labels"][PODCLIQUE].endswith(f"-{name}")]


def test_each_worker_reaches_its_leader_at_the_address_groves_variables_give(
    release: Release, running: list[dict[str, Any]]
) -> None:
    (leader,) = role(running, "leader")
    workers = role(running, "worker")
    hostnames = {w["spec"]["hostname"] for w in workers}

    def greeted() -> set[str] | None:
        said = log(release.cluster, NAMESPACE, leader["metadata"]["name"])
        heard = {line.split()[2] for line in said.splitlines() if line.startswith("hello from")}
        return heard if heard >= hostnames else None

    assert eventually(greeted, "greeting from each worker", within=60) == hostnames
    for worker in workers:
        said = log(release.cluster, NAMESPACE, worker["metadata"]["name"], "worker")
        assert f"told serve-0-model-0-leader-0.{leader['spec']['subdomain']}" in said


def started(pod: dict[str, Any], container: str) -> datetime:
    (status,) = (s for s in pod["status"]["containerStatuses"] if s["name"] == container)
    return datetime.fromisoformat(status["state"]["running"]["startedAt"])


def test_the_workers_start_once_their_leader_is_ready(running: list[dict[str, Any]]) -> None:
    (leader,) = role(running, "leader")
    ready = condition(leader, "Ready")
    assert ready
    leader_ready = datetime.fromisoformat(ready["lastTransitionTime"])
    assert (leader_ready - started(leader, "leader")).total_seconds() >= 2  # it listens late
    for worker in role(running, "worker"):
        inits = [c["name"] for c in worker["spec"]["initContainers"]]
        assert inits[-1] == INIT_CONTAINER
        assert started(worker, "worker") >= leader_ready
