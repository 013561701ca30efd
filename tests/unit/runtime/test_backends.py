"""The backend client's pure parts: prepare-pods chunks, and what a backend's answer must be."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gangway_contracts import labels
from gangway_contracts.grove import PodGang, PodGangSpec
from gangway_contracts.k8s import ObjectMeta
from gangway_runtime.backends import PrepareFailed, checked, chunks

GATE = {"name": labels.PODGANG_PENDING_CREATION_GATE}


def pod(name: str, size: int = 10) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ml"}, "spec": {"x": "y" * size}}


PODGANG = PodGang(metadata=ObjectMeta(name="g", namespace="ml"), spec=PodGangSpec(podgroups=[]))


@given(st.integers(1, 40), st.integers(200, 20_000))
def test_prepare_requests_split_only_to_fit_and_keep_every_pod_in_order(
    count: int, limit: int
) -> None:
    pods = [pod(f"p-{i}", 100) for i in range(count)]
    requests = chunks(PODGANG, pods, limit)
    assert [p for chunk in requests for p in chunk] == pods
    if len(requests) > 1:
        assert all(len(chunk) < count for chunk in requests)


def test_a_gang_that_fits_is_one_request() -> None:
    pods = [pod(f"p-{i}") for i in range(100)]
    assert len(chunks(PODGANG, pods, 1 << 20)) == 1


def test_the_backends_answer_must_be_the_pods_asked_about() -> None:
    asked = [pod("a"), pod("b")]
    with pytest.raises(PrepareFailed, match="differ"):
        checked("kai-scheduler", asked, [pod("b"), pod("a")])
    with pytest.raises(PrepareFailed, match="differ"):
        checked("kai-scheduler", asked, [pod("a")])


def test_a_pod_is_never_created_without_our_gate() -> None:
    answered = [pod("a"), {**pod("b"), "spec": {"schedulingGates": [GATE]}}]
    prepared = checked("kai-scheduler", [pod("a"), pod("b")], answered)
    assert all(p["spec"]["schedulingGates"] == [GATE] for p in prepared)
