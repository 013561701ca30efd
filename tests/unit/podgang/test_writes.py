"""The pure parts of carrying out a decision: when a write counts as mirrored."""

from __future__ import annotations

import pytest

from gangway_contracts.k8s import ObjectMeta
from gangway_contracts.pods import Pod
from gangway_contracts.subjects import Kind
from gangway_podgang.compact import PodRecord, compact_pod
from gangway_podgang.readmodel import Workload
from gangway_podgang.writes import Expectation


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
