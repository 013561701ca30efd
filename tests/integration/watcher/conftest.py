"""Objects the watcher tests create, labelled per test so a watcher can be told to see only
this test's objects (the cluster is shared with the other tests of the session)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from gangway_contracts import labels
from gangway_contracts.resources import MirroredResource
from gangway_contracts.subjects import Kind
from gangway_watcher import metrics
from tests.support.manifests import fixture

TEST_LABEL = "gangway.dev/test"


def only_this_test(resource: MirroredResource, namespace: str) -> MirroredResource:
    selector = f"{TEST_LABEL}={namespace}"
    if resource.label_selector:
        selector = f"{resource.label_selector},{selector}"
    return dataclasses.replace(resource, label_selector=selector)


def labelled(doc: dict[str, Any], namespace: str, name: str) -> dict[str, Any]:
    """A copy of a manifest named ``name`` in ``namespace``, with the test's label."""
    doc = copy.deepcopy(doc)
    written = doc["metadata"]
    doc["metadata"] = {
        "name": name,
        "namespace": namespace,
        "labels": {**written.get("labels", {}), TEST_LABEL: namespace},
        "annotations": written.get("annotations", {}),
    }
    return doc


def podcliqueset(namespace: str, name: str) -> dict[str, Any]:
    return labelled(fixture("podcliquesets/single-clique.yaml"), namespace, name)


def podgang(namespace: str, name: str, backend: str = "kai-scheduler") -> dict[str, Any]:
    doc = labelled(fixture("podgangs/base-gang.yaml"), namespace, name)
    doc["metadata"]["labels"][labels.SCHEDULER_NAME] = backend
    doc.pop("status", None)
    return doc


def pod(namespace: str, name: str, managed: bool = True) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {}},
        "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
    }
    if managed:
        doc["metadata"]["labels"][labels.MANAGED_BY] = labels.MANAGED_BY_GANGWAY
    return labelled(doc, namespace, name)


def kai_podgroup(namespace: str, name: str) -> dict[str, Any]:
    doc = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"labels": {labels.MANAGED_BY: labels.MANAGED_BY_GANGWAY}},
        "spec": {"minMember": 1, "queue": "team-a"},
    }
    return labelled(doc, namespace, name)


def pcs_relists(reason: str) -> float:
    """The PodCliqueSet relists this process's watchers made for ``reason`` so far."""
    value: float = metrics.RELISTS.labels(Kind.PODCLIQUESET, reason)._value.get()
    return value
