"""The API request metric's resource label: the resource, never a namespace or a name."""

from __future__ import annotations

import pytest

from gangway_runtime.kube import resource_of


@pytest.mark.parametrize(
    ("path", "resource"),
    [
        ("/api/v1/namespaces/ml/pods", "pods"),
        ("/api/v1/namespaces/ml/pods/trainer-0-worker-1", "pods"),
        ("/api/v1/namespaces/ml/pods/trainer-0-worker-1/status", "pods/status"),
        (
            "/apis/scheduler.grove.io/v1alpha1/namespaces/ml/podgangs/trainer-0/status",
            "podgangs.scheduler.grove.io/status",
        ),
        ("/apis/events.k8s.io/v1/namespaces/ml/events", "events.events.k8s.io"),
        ("/api/v1/namespaces/ml", "namespaces"),
        ("/api/v1/nodes?watch=1&resourceVersion=5", "nodes"),
        ("/apis/scheduler.grove.io", "discovery"),
        ("/api/v1", "discovery"),
    ],
)
def test_resource_of(path: str, resource: str) -> None:
    assert resource_of(path) == resource
