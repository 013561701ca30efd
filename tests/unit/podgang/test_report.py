"""What one Kubernetes Event says for a round's steps of one kind: counts and names that fit."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gangway_contracts import events
from gangway_contracts.k8s import NamespacedName
from gangway_podgang.report import NOTE_LIMIT, named, note

COMMON: dict[str, Any] = {
    "workload": NamespacedName(namespace="ml", name="demo"),
    "at": datetime(2026, 1, 1, tzinfo=UTC),
    "service": "podgang",
    "trace_id": "",
}


def lifted(gang: str, pods: int) -> events.GatesLifted:
    return events.GatesLifted(**COMMON, podgang=gang, pods=[f"{gang}-{i}" for i in range(pods)])


def test_one_gang_is_named() -> None:
    created = events.PodGangCreated(**COMMON, podgang="demo-0", backend="kai-scheduler")
    assert note([created]) == "PodGang created for kai-scheduler: demo-0"


def test_many_gangs_are_counted_with_their_pods() -> None:
    said = note([lifted(f"demo-{i}", 2) for i in range(3)])
    assert said == "scheduling gates lifted on 6 pods of 3 PodGangs: demo-0, demo-1, demo-2"


def test_a_thousand_gangs_fit_in_one_note() -> None:
    said = note([lifted(f"demo-0-prefill-{i}", 1) for i in range(1000)])
    assert len(said) <= NOTE_LIMIT
    assert said.startswith("scheduling gates lifted on 1000 pods of 1000 PodGangs: demo-0-")
    assert said.endswith(" more")


@given(
    names=st.lists(st.text("abc-0123456789", min_size=1, max_size=63), max_size=200),
    room=st.integers(min_value=80, max_value=NOTE_LIMIT),
)
def test_named_fits_and_counts_every_name(names: list[str], room: int) -> None:
    said = named(names, room)
    assert len(said) <= room
    shown, _, more = said.partition(" and ")
    listed = shown.split(", ") if shown else []
    assert listed == names[: len(listed)]
    hidden = int(more.removesuffix(" more")) if more else 0
    assert len(listed) + hidden == len(names)
