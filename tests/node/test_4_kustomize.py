"""The kustomize path on the same node, after the chart is gone: deploy/overlays/self-signed
(the default overlay with Gangway's own webhook certificate instead of cert-manager's) as a
user's overlay would take it — images set to the ones built here, one replica of each
Deployment so it fits a two-core node — applied with ``kubectl apply --server-side``. Its
namespace enforces the restricted Pod Security level: every Gangway pod must pass it. It
runs new work beside what the chart left, then ``kubectl delete`` removes it and keeps the CRDs.
The last file of the suite.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gangway_localcluster.controlplane import APIError
from tests.node.test_3_lifecycle import gangway_image_pods, runs_new_work
from tests.node.workloads import sleepers
from tests.support.deploy import rendered
from tests.support.realnode import (
    NAMESPACE,
    Release,
    apply,
    describe,
    eventually,
    installed,
    workload_sets,
)

OVERLAY = "self-signed"


@pytest.fixture(scope="module")
def overlay(release: Release, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The overlay's objects with this node's images and one replica each, applied; every
    pod Ready."""
    docs = rendered(OVERLAY)
    for doc in docs:
        if doc["kind"] == "Deployment":
            doc["spec"]["replicas"] = 1
    text = (
        yaml.safe_dump_all(docs)
        .replace("gangway:0.1.0", release.node.images.gangway)
        .replace("nats:2.14.5-alpine", release.node.images.nats)
    )
    manifests = tmp_path_factory.mktemp("kustomize") / f"{OVERLAY}.yaml"
    manifests.write_text(text)
    release.kubectl("apply", "--server-side", "-f", str(manifests))
    eventually(
        lambda: installed(release.cluster),
        f"{OVERLAY} overlay's pods Ready",
        diagnose=lambda: describe(release.cluster, NAMESPACE),
    )
    return manifests


def test_the_overlay_runs_and_its_webhook_refuses_through_its_service(
    release: Release, overlay: Path
) -> None:
    with pytest.raises(APIError) as refused:
        apply(release.cluster, "refused", sleepers("nowhere", "no-such-scheduler"))
    assert refused.value.status == 422
    runs_new_work(release, "after-kustomize")


def test_deleting_the_overlay_keeps_the_crds_and_the_workloads(
    release: Release, overlay: Path
) -> None:
    before = workload_sets(release.cluster)
    assert before, "the test before left a workload to keep"
    release.kubectl("delete", "-f", str(overlay), "--wait")
    assert not gangway_image_pods(release)
    assert workload_sets(release.cluster) == before
