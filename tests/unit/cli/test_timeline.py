"""The journal as a timeline: offsets, step durations, per-gang latencies, the summary."""

from __future__ import annotations

import datetime
import math
import random
import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gangway_cli.timeline import entries, gang_latencies, percentile, render, summarise
from gangway_contracts import events as ev
from gangway_contracts.events import AnyJournalEvent
from gangway_contracts.k8s import NamespacedName

T0 = datetime.datetime(2026, 11, 22, 12, 0, tzinfo=datetime.UTC)
WORKLOAD = NamespacedName(namespace="ml", name="demo")
TRACE = "0af7651916cd43dd8448eb211c80319c"


def at(seconds: float) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=seconds)


def common(seconds: float, service: str = "gangway-podgang") -> dict[str, Any]:
    return {"workload": WORKLOAD, "at": at(seconds), "service": service, "trace_id": TRACE}


def gang_events(gang: str, start: float) -> list[AnyJournalEvent]:
    return [
        ev.PodGangCreated(**common(start), podgang=gang, backend="kai-scheduler"),
        ev.BackendSynced(
            **common(start + 0.5, "gangway-backend-kai-scheduler"),
            podgang=gang,
            backend="kai-scheduler",
            resources=[f"PodGroup ml/{gang}"],
        ),
        ev.PodsCreated(**common(start + 1), podgang=gang, pods=["a", "b"]),
        ev.PodGangInitialized(**common(start + 1.5), podgang=gang),
        ev.GatesLifted(**common(start + 2), podgang=gang, pods=["a", "b"]),
    ]


def journal(gangs: int = 2) -> list[AnyJournalEvent]:
    found: list[AnyJournalEvent] = [
        ev.PodCliqueSetObserved(**common(0), generation=1),
        ev.PodGangPlanned(**common(0.1), podgangs=[f"demo-{i}" for i in range(gangs)]),
    ]
    for i in range(gangs):
        found += gang_events(f"demo-{i}", 0.2 + i)
    return found


def test_each_entry_says_when_and_how_long_since_its_gangs_previous_step() -> None:
    timeline = entries(journal(gangs=1))
    assert [e.step for e in timeline] == [
        "PodCliqueSetObserved",
        "PodGangPlanned",
        "PodGangCreated",
        "BackendSynced",
        "PodsCreated",
        "PodGangInitialized",
        "GatesLifted",
    ]
    assert timeline[0].took is None
    created, synced = timeline[2], timeline[3]
    assert math.isclose(created.took or 0, 0.1)  # since the workload's last step
    assert math.isclose(synced.took or 0, 0.5)
    assert synced.service == "gangway-backend-kai-scheduler"
    assert synced.detail == "PodGroup ml/demo-0"


def test_entries_are_ordered_by_time_whatever_order_they_were_read_in() -> None:
    distinct = journal(gangs=1) + gang_events("demo-9", 0.33)  # no two at one instant
    shuffled = list(distinct)
    random.Random(7).shuffle(shuffled)
    assert entries(shuffled) == entries(distinct)


def test_gang_latency_runs_from_the_observation_that_made_the_gang() -> None:
    events = journal(gangs=2)
    # A scale-up later: the new gang's latency starts at the second observation.
    events.append(ev.PodCliqueSetObserved(**common(100), generation=2))
    events += gang_events("demo-2", 100.5)
    lifted = gang_latencies(events, "GatesLifted")
    assert {k: round(v, 3) for k, v in lifted.items()} == {
        "demo-0": 2.2,
        "demo-1": 3.2,
        "demo-2": 2.5,
    }


@given(st.lists(st.floats(min_value=0, max_value=1e6), min_size=1, max_size=200))
def test_percentile_is_a_value_with_that_share_at_or_below_it(values: list[float]) -> None:
    for q in (1, 50, 99, 100):
        p = percentile(values, q)
        assert p in values
        assert sum(v <= p for v in values) >= q / 100 * len(values)
    assert percentile(values, 100) == max(values)


def test_small_workloads_print_in_full_large_ones_as_a_summary() -> None:
    small = render("ml/demo", journal(gangs=2))
    assert small[1] == f"trace id: {TRACE}"
    assert any("GatesLifted" in line and "demo-1" in line for line in small)

    large = render("ml/demo", journal(gangs=40))
    assert not any("demo-39" in line for line in large)
    lifted = next(line for line in large if line.startswith("GatesLifted"))
    assert " 40 " in lifted
    per_gang = next(
        line for line in large if line.strip().startswith("GatesLifted") and "p50" in line
    )
    assert "(40 gangs)" in per_gang
    full = render("ml/demo", journal(gangs=40), full=True)
    assert full[4].startswith(" 0.000s"), "offsets are aligned right, to the longest"


def test_nothing_journaled_says_so() -> None:
    assert "nothing journaled" in render("ml/none", [])[0]


def test_summary_counts_each_step_once_per_entry() -> None:
    rows = {row.step: row for row in summarise(entries(journal(gangs=5)))}
    assert rows["GatesLifted"].count == 5
    assert rows["BackendSynced"].services == ("gangway-backend-kai-scheduler",)
    assert math.isclose(rows["GatesLifted"].took_p50, 0.5)


def test_gang_latency_runs_from_the_plan_when_no_observation_is_journaled() -> None:
    """podgang journals PodGangPlanned when it plans a generation: a gang made late in a
    large PodCliqueSet counts its wait from there, not from its own creation."""
    events = [e for e in journal(gangs=2) if not isinstance(e, ev.PodCliqueSetObserved)]
    planned = next(e for e in events if isinstance(e, ev.PodGangPlanned))
    lifted = gang_latencies(events, "GatesLifted")
    first_lift = min(e.at for e in events if isinstance(e, ev.GatesLifted))
    assert min(lifted.values()) == (first_lift - planned.at).total_seconds()


def test_columns_line_up_however_long_a_gang_s_name() -> None:
    long = "disaggregated-inference-serving-0-prefill-workers-0"
    journal_ = journal(gangs=1) + gang_events(long, 3)
    lines = render("ml/demo", journal_)
    table = lines[3:]
    header = table[0]
    starts = {column: header.index(column) for column in ("service", "step", "gang", "detail")}
    for line in table[1:]:
        assert line.index("gangway-") == starts["service"], line
        detail_at = starts["detail"]
        assert line[detail_at - 2 : detail_at] == "  " or len(line) <= detail_at, line


def test_the_scheduler_s_verdict_is_told_in_its_words() -> None:
    words = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    verdicts: list[AnyJournalEvent] = [
        ev.SchedulerVerdict(
            **common(5), podgang="demo-0", scheduled=False, reason="Unschedulable", message=words
        ),
        ev.SchedulerVerdict(**common(9), podgang="demo-0", scheduled=True, reason="x"),
    ]
    lines = render("ml/demo", journal(gangs=1) + verdicts)
    assert re.split(r"\s{2,}", lines[-2])[-3:] == [
        "SchedulerVerdict",
        "demo-0",
        f"Unschedulable: {words}",
    ]
    assert re.split(r"\s{2,}", lines[-1])[-3:] == ["SchedulerVerdict", "demo-0", "placed"]


def test_the_gang_s_health_is_told_counted() -> None:
    health: list[AnyJournalEvent] = [
        ev.PodGangReadyChanged(**common(5), podgang="demo-0", ready=True, ready_pods=4, pods=4),
        ev.PodGangReadyChanged(**common(9), podgang="demo-0", ready=False, ready_pods=3, pods=4),
    ]
    lines = render("ml/demo", journal(gangs=1) + health)
    said = [re.split(r"\s{2,}", line)[-1] for line in lines[-2:]]
    assert said == ["Ready: 4 of 4 pods ready", "not Ready: 3 of 4 pods ready"]
