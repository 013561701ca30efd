"""The pure parts of carrying out a decision: prepare-pods chunks, what a backend's answer
must be, and when a write counts as mirrored."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gangway_contracts import labels
from gangway_contracts.grove import PodGang, PodGangSpec
from gangway_contracts.k8s import ObjectMeta
from gangway_contracts.pods import Pod
from gangway_contracts.subjects import Kind
from gangway_podgang.compact import PodRecord, compact_pod
from gangway_podgang.readmodel import Workload
from gangway_podgang.writes import Expectation, PrepareFailed, _checked, _chunks

GATE = {"name": labels.PODGANG_PENDING_CREATION_GATE}


def pod(name: str, size: int = 10) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ml"}, "spec": {"x": "y" * size}}


PODGANG = PodGang(metadata=ObjectMeta(name="g", namespace="ml"), spec=PodGangSpec(podgroups=[]))


@given(st.integers(1, 40), st.integers(200, 20_000))
def test_prepare_requests_split_only_to_fit_and_keep_every_pod_in_order(
    count: int, limit: int
) -> None:
    pods = [pod(f"p-{i}", 100) for i in range(count)]
    chunks = _chunks(PODGANG, pods, limit)
    assert [p for chunk in chunks for p in chunk] == pods
    if len(chunks) > 1:
        assert all(len(chunk) < count for chunk in chunks)


def test_a_gang_that_fits_is_one_request() -> None:
    pods = [pod(f"p-{i}") for i in range(100)]
    assert len(_chunks(PODGANG, pods, 1 << 20)) == 1


def test_the_backends_answer_must_be_the_pods_asked_about() -> None:
    asked = [pod("a"), pod("b")]
    with pytest.raises(PrepareFailed, match="differ"):
        _checked("kai-scheduler", asked, [pod("b"), pod("a")])
    with pytest.raises(PrepareFailed, match="differ"):
        _checked("kai-scheduler", asked, [pod("a")])


def test_a_pod_is_never_created_without_our_gate() -> None:
    answered = [pod("a"), {**pod("b"), "spec": {"schedulingGates": [GATE]}}]
    checked = _checked("kai-scheduler", [pod("a"), pod("b")], answered)
    assert all(p["spec"]["schedulingGates"] == [GATE] for p in checked)


def live_pod(name: str, version: str, deleting: bool = False) -> PodRecord:
    meta = ObjectMeta(
        name=name,
        resource_version=version,
        deletion_timestamp="2026-01-01T00:00:00Z" if deleting else None,
    )
    return compact_pod(Pod(metadata=meta))


@pytest.mark.parametrize(
    ("expected", "pods", "met"),
    [
        (Expectation(Kind.POD, "a", "12"), {}, False),
        (Expectation(Kind.POD, "a", "12"), {"a": live_pod("a", "11")}, False),
        (Expectation(Kind.POD, "a", "12"), {"a": live_pod("a", "12")}, True),
        (Expectation(Kind.POD, "a", "12"), {"a": live_pod("a", "30")}, True),
        (Expectation(Kind.POD, "a", ""), {"a": live_pod("a", "1")}, True),
        (Expectation(Kind.POD, "a", None), {}, True),
        (Expectation(Kind.POD, "a", None), {"a": live_pod("a", "5", deleting=True)}, True),
        (Expectation(Kind.POD, "a", None), {"a": live_pod("a", "5")}, False),
    ],
)
def test_a_write_is_mirrored_once_the_model_shows_it_or_something_newer(
    expected: Expectation, pods: dict[str, PodRecord], met: bool
) -> None:
    assert expected.met(Workload(pods=pods)) is met
