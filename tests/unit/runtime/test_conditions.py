"""Merging the backend's condition into a PodGang's conditions: idempotent, and blind to
everyone else's."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gangway_contracts.k8s import Condition
from gangway_runtime.conditions import merged_conditions
from gangway_runtime.consumer import backoff


def synced(status: str = "True", at: str = "2026-11-22T10:00:00Z", gen: int = 1) -> Condition:
    return Condition(
        type="BackendSynced",
        status=status,
        reason="Synced" if status == "True" else "Failed",
        message="m",
        last_transition_time=at,
        observed_generation=gen,
    )


INITIALIZED: dict[str, Any] = {
    "type": "Initialized",
    "status": "False",
    "reason": "PodsPending",
    "message": "",
    "lastTransitionTime": "2026-11-22T09:00:00Z",
}


@given(st.sampled_from(["True", "False"]), st.integers(min_value=0, max_value=5))
def test_applying_twice_writes_once(status: str, generation: int) -> None:
    first = merged_conditions([INITIALIZED], synced(status, gen=generation))
    assert first is not None
    assert (
        merged_conditions(first, synced(status, at="2026-11-22T11:00:00Z", gen=generation)) is None
    )
    assert first[0] == INITIALIZED, "another owner's condition is kept as it was"


def test_transition_time_moves_only_with_the_status() -> None:
    first = merged_conditions([], synced("True", at="T1", gen=1))
    assert first is not None
    newer_generation = merged_conditions(first, synced("True", at="T2", gen=2))
    assert newer_generation is not None
    assert newer_generation[0]["lastTransitionTime"] == "T1"
    flipped = merged_conditions(newer_generation, synced("False", at="T3", gen=2))
    assert flipped is not None
    assert flipped[0]["lastTransitionTime"] == "T3"


def test_backoff_grows_and_is_capped() -> None:
    delays = [backoff(n) for n in range(1, 12)]
    assert delays[:3] == [0.5, 1.0, 2.0]
    assert delays == sorted(delays)
    assert max(delays) == 60.0
