"""Gangway's own pods on the real node over their life: a killed container is restarted and
work goes on; ``helm upgrade`` to a new image replaces Gangway's pods and no workload's;
``helm uninstall`` removes Gangway and keeps the CRDs, the PodCliqueSets and their pods
(docs/operations.md, "Upgrade" and "Uninstall"). Only test_4_kustomize.py comes after.
"""

from __future__ import annotations

import subprocess
from typing import Any

from tests.node.workloads import sleepers
from tests.support.chart import CHART
from tests.support.realnode import (
    NAMESPACE,
    RELEASE,
    Release,
    all_ready,
    apply,
    describe,
    eventually,
    is_ready,
    kill_container,
    pods,
    restarts,
    workload_pods,
    workload_sets,
)

NEXT_TAG = "0.1.0-next"
PODGANG = "app.kubernetes.io/name=gangway-podgang"


def runs_new_work(release: Release, namespace: str) -> None:
    apply(release.cluster, namespace, sleepers("after", "default-scheduler"))
    found = eventually(
        lambda: all_ready(release.cluster, namespace),
        f"PodCliqueSet in {namespace} running",
        diagnose=lambda: describe(release.cluster, NAMESPACE),
    )
    assert len(found) == 2


def test_a_killed_podgang_container_is_restarted_and_new_work_runs(release: Release) -> None:
    (podgang,) = pods(release.cluster, NAMESPACE, PODGANG)
    kill_container(podgang, "podgang")

    def back() -> dict[str, Any] | None:
        (now,) = pods(release.cluster, NAMESPACE, PODGANG)
        return now if restarts(now) == 1 and is_ready(now) else None

    now = eventually(back, "podgang restarted and Ready")
    assert now["metadata"]["uid"] == podgang["metadata"]["uid"]  # the same pod, restarted
    runs_new_work(release, "after-restart")


def gangway_image_pods(release: Release) -> list[dict[str, Any]]:
    """Gangway's running pods (not NATS's, not the Jobs')."""
    return [
        p
        for p in pods(release.cluster, NAMESPACE)
        if p["status"].get("phase") != "Succeeded"
        and not p["metadata"]["name"].startswith("gangway-nats-")
    ]


def jobs_done(release: Release) -> set[str]:
    """Gangway's Jobs, all of them done; empty while one is not."""
    _, found = release.cluster.request("GET", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs")
    if any(not j["status"].get("succeeded") for j in found["items"]):
        return set()
    return {j["metadata"]["name"] for j in found["items"]}


def test_an_upgrade_to_a_new_image_replaces_gangways_pods_and_no_workloads(
    release: Release,
) -> None:
    before = workload_pods(release.cluster)
    repository = release.node.images.gangway.rsplit(":", 1)[0]
    subprocess.run(
        ["podman", "tag", release.node.images.gangway, f"{repository}:{NEXT_TAG}"], check=True
    )
    release.node.load([f"{repository}:{NEXT_TAG}"])
    # The node has it now; the tag goes (rmi of one of two names only untags).
    subprocess.run(["podman", "rmi", f"{repository}:{NEXT_TAG}"], check=True, capture_output=True)
    release.helm(
        *("upgrade", RELEASE, str(CHART), "--namespace", NAMESPACE, "--reuse-values"),
        *("--set", f"image.tag={NEXT_TAG}"),
    )

    def rolled() -> bool:
        found = gangway_image_pods(release)
        images = {c["image"] for p in found for c in p["spec"]["containers"]}
        return images == {f"{repository}:{NEXT_TAG}"} and all(is_ready(p) for p in found)

    eventually(
        rolled,
        "Gangway's pods on the new image",
        diagnose=lambda: describe(release.cluster, NAMESPACE),
    )
    # The Jobs ran again under the new revision's names; the last revision's are gone.
    eventually(
        lambda: jobs_done(release) == {"gangway-setup-r2", "gangway-webhook-cert-r2"},
        "the second revision's Jobs done",
    )
    runs_new_work(release, "after-upgrade")  # and by then podgang has looked at every gang
    after = workload_pods(release.cluster)
    assert {name: after.get(name) for name in before} == before


def test_uninstall_removes_gangway_and_keeps_the_crds_and_the_workloads(
    release: Release,
) -> None:
    before, sets = workload_pods(release.cluster), workload_sets(release.cluster)
    assert sets, "the tests before left workloads to keep"
    release.helm("uninstall", RELEASE, "--namespace", NAMESPACE, "--wait")
    eventually(lambda: not gangway_image_pods(release), "Gangway's pods gone")
    _, crds = release.cluster.request(
        "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    )
    names = {c["metadata"]["name"] for c in crds["items"]}
    assert {"podcliquesets.grove.io", "podgangs.scheduler.grove.io"} <= names
    assert workload_sets(release.cluster) == sets
    after = workload_pods(release.cluster)
    assert {name: after.get(name) for name in before} == before
