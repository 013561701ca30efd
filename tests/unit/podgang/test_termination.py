"""Gang termination with Grove's meaning: a clique that ran and stays below its minimum for
terminationDelay has its gang recycled whole (a base gang's replica entire); never a gang
that never ran, never one already recycled for that breach."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.k8s import Condition
from gangway_podgang.cliques import PodCliqueView
from gangway_podgang.plan import plan_podgangs
from gangway_podgang.termination import DEFAULT_DELAY, cliques_of, delay_of, recycling
from tests.support.manifests import fixture

SAMPLE = "grove/samples/user-guide/03_environment-variables-for-pod-discovery/pcsg-env-vars.yaml"
MADE = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)
GROUP = "env-demo-pcsg-0-model-instance"


def stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def pcs(delay: str | None = "1h") -> PodCliqueSet:
    manifest = fixture(SAMPLE)
    manifest["metadata"]["uid"] = "pcs-uid"
    if delay is not None:
        manifest["spec"]["template"]["terminationDelay"] = delay
    return from_object(manifest, PodCliqueSet)


def clique(name: str, *, ran: bool, breached_at: datetime | None) -> PodCliqueView:
    scheduled = Condition(
        type="PodCliqueScheduled",
        status="True" if ran and breached_at is None else "False",
        reason="",
        message="",
        # A transition long after it was made (it ran, then lost its pods), or its first word.
        last_transition_time=stamp((breached_at or MADE) if ran else MADE + timedelta(seconds=1)),
    )
    breach = Condition(
        type="MinAvailableBreached",
        status="True" if breached_at else "False",
        reason="",
        message="",
        last_transition_time=stamp(breached_at or MADE),
    )
    status: dict[str, Any] = {
        "conditions": [msgspec.to_builtins(scheduled), msgspec.to_builtins(breach)]
    }
    meta = {"name": name, "creationTimestamp": stamp(MADE)}
    return msgspec.convert({"metadata": meta, "status": status}, PodCliqueView)


def podgangs(found: PodCliqueSet, made: datetime = MADE) -> dict[str, PodGang]:
    return {
        g.name: msgspec.convert(
            {
                "metadata": {"name": g.name, "creationTimestamp": stamp(made)},
                "spec": {"podgroups": []},
            },
            PodGang,
        )
        for g in plan_podgangs(found).gangs
    }


def test_the_delay_is_grove_s() -> None:
    assert delay_of(pcs("1h30m")) == 5400.0
    assert delay_of(pcs(None)) == DEFAULT_DELAY == 4 * 3600.0


@pytest.mark.parametrize(
    ("in_gang", "recycled"),
    [
        # A clique of the base gang: the whole PodCliqueSet replica (its scaled gang too).
        (f"{GROUP}-0-worker", ["env-demo-pcsg-0", f"{GROUP}-0"]),
        # A clique of the scaled gang: that gang alone.
        (f"{GROUP}-1-worker", [f"{GROUP}-0"]),
    ],
)
def test_a_clique_that_ran_and_stays_below_its_minimum_has_its_gang_recycled(
    in_gang: str, recycled: list[str]
) -> None:
    found = pcs("1h")
    broke = MADE + timedelta(hours=2)
    cliques = {in_gang: clique(in_gang, ran=True, breached_at=broke)}
    # Not yet: the delay runs, and says when to look again.
    early = recycling(
        found, plan_podgangs(found), cliques, podgangs(found), broke + timedelta(minutes=59)
    )
    assert early.gangs == ()
    assert early.wake_in == 60.0
    due = recycling(
        found, plan_podgangs(found), cliques, podgangs(found), broke + timedelta(hours=1)
    )
    assert list(due.gangs) == recycled
    assert in_gang in [c for found in due.breached.values() for c in found]
    # Their PodCliques go with their pods: made again, they are no candidates until the
    # new gang has run.
    deleted = cliques_of(due, plan_podgangs(found), cliques)
    gang = recycled[-1] if "-1-" in in_gang else recycled[0]
    assert [(d.gang, d.name, d.uid) for d in deleted] == [(gang, in_gang, "")]
    later = broke + timedelta(hours=3)
    assert recycling(found, plan_podgangs(found), {}, podgangs(found), later).gangs == ()


def test_a_clique_that_never_ran_is_left_to_the_scheduler() -> None:
    found = pcs("1h")
    name = f"{GROUP}-0-worker"
    cliques = {name: clique(name, ran=False, breached_at=MADE + timedelta(seconds=1))}
    later = MADE + timedelta(days=1)
    found_now = recycling(found, plan_podgangs(found), cliques, podgangs(found), later)
    assert (found_now.gangs, found_now.wake_in) == ((), None)
