"""A workload's journal as a timeline: which service did what, when, and how long each step
took. Pure: ``gangway trace`` prints it, the benchmarks take their per-gang latencies from it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from gangway_contracts import events as ev
from gangway_contracts.events import AnyJournalEvent, event_type

# Above this many entries the timeline is summarised per step unless asked for in full.
FULL_TIMELINE_LIMIT: Final = 60


@dataclass(frozen=True)
class Entry:
    offset: float  # seconds since the journal's first entry
    service: str
    step: str
    gang: str  # "" for steps of the whole workload
    detail: str
    took: float | None  # since this gang's previous entry (or the workload's, for its steps)


def detail(event: AnyJournalEvent) -> str:
    text = ""
    match event:
        case ev.PodCliqueSetObserved():
            text = f"generation {event.generation}"
        case ev.PodGangPlanned():
            text = f"{len(event.podgangs)} PodGangs"
        case ev.PodGangCreated():
            text = f"for {event.backend}"
        case ev.PodsCreated() | ev.GatesLifted():
            text = f"{len(event.pods)} pods"
        case ev.BackendSynced():
            text = ", ".join(event.resources)
        case ev.PodGangPhaseChanged():
            text = f"{event.phase}: {event.bound} pods bound, {event.running} running"
        case ev.SchedulerVerdict():
            text = "placed" if event.scheduled else f"{event.reason}: {event.message}"
        case ev.PodGangReadyChanged():
            said = "Ready" if event.ready else "not Ready"
            text = f"{said}: {event.ready_pods} of {event.pods} pods ready"
        case ev.GangTerminated():
            text = f"below minAvailable for {event.delay}: {', '.join(event.cliques)}"
        case ev.GangRolled():
            text = f"{len(event.pods)} pods of an older template replaced"
        case ev.BackendSyncFailed():
            text = f"{event.reason}: {event.message}"
        case ev.QueueAdmitted():
            text = event.message
        case ev.QueueHeld():
            text = f"{event.reason}: {event.message}"
        case ev.AdmissionRejected():
            errors = "; ".join(f"{e.field}: {e.reason}" for e in event.errors)
            text = f"{event.operation} refused: {errors}"
    return text


def gang_of(event: AnyJournalEvent) -> str:
    return getattr(event, "podgang", "")


def ordered(events: Iterable[AnyJournalEvent]) -> list[AnyJournalEvent]:
    """By time; entries of one instant keep their journal order."""
    return sorted(events, key=lambda e: e.at)


def entries(events: Iterable[AnyJournalEvent]) -> list[Entry]:
    timeline = ordered(events)
    if not timeline:
        return []
    start = timeline[0].at
    last_seen: dict[str, float] = {}
    found = []
    for event in timeline:
        offset = (event.at - start).total_seconds()
        gang = gang_of(event)
        previous = last_seen.get(gang, last_seen.get(""))
        found.append(
            Entry(
                offset=offset,
                service=event.service,
                step=event_type(event),
                gang=gang,
                detail=detail(event),
                took=None if previous is None else offset - previous,
            )
        )
        last_seen[gang] = offset
    return found


def trace_ids(events: Iterable[AnyJournalEvent]) -> list[str]:
    return sorted({e.trace_id for e in events if e.trace_id})


def gang_latencies(events: Iterable[AnyJournalEvent], step: str) -> dict[str, float]:
    """Per gang, seconds from the PodCliqueSet being observed (the generation that made the
    gang: its PodGangPlanned entry) to the gang's first ``step`` entry."""
    observed: float | None = None
    origin: dict[str, float] = {}
    reached: dict[str, float] = {}
    timeline = ordered(events)
    start = timeline[0].at if timeline else None
    for event in timeline:
        assert start is not None
        at = (event.at - start).total_seconds()
        if isinstance(event, ev.PodCliqueSetObserved):
            observed = at
        if isinstance(event, ev.PodGangPlanned):
            # Planned as podgang saw the generation: that is when its new gangs began.
            for planned in event.podgangs:
                origin.setdefault(planned, observed if observed is not None else at)
        gang = gang_of(event)
        if not gang:
            continue
        origin.setdefault(gang, observed if observed is not None else at)
        if event_type(event) == step:
            reached.setdefault(gang, at)
    return {gang: reached[gang] - origin[gang] for gang in reached}


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest rank: the smallest value with at least q% of the values at or below it."""
    if not values:
        return math.nan
    ranked = sorted(values)
    return ranked[max(0, math.ceil(q / 100 * len(ranked)) - 1)]


@dataclass(frozen=True)
class StepSummary:
    step: str
    services: tuple[str, ...]
    count: int
    first: float
    last: float
    took_p50: float
    took_p99: float


def summarise(timeline: Sequence[Entry]) -> list[StepSummary]:
    """One row per step, in the order steps first happened."""
    by_step: dict[str, list[Entry]] = {}
    for entry in timeline:
        by_step.setdefault(entry.step, []).append(entry)
    rows = []
    for step, group in by_step.items():
        took = [e.took for e in group if e.took is not None]
        rows.append(
            StepSummary(
                step=step,
                services=tuple(sorted({e.service for e in group})),
                count=len(group),
                first=group[0].offset,
                last=group[-1].offset,
                took_p50=percentile(took, 50),
                took_p99=percentile(took, 99),
            )
        )
    return rows


def _seconds(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3f}s"


def table(
    header: tuple[str, ...],
    rows: Sequence[tuple[str, ...]],
    *,
    right_until: int = 0,
    right_from: int | None = None,
) -> list[str]:
    """Columns as wide as their widest cell, the last one unpadded; numbers aligned right:
    the columns before ``right_until`` and those from ``right_from`` on."""
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header) - 1)]

    def right(i: int) -> bool:
        return i < right_until or (right_from is not None and i >= right_from)

    def line(row: tuple[str, ...]) -> str:
        cells = [
            cell.rjust(width) if right(i) else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=False))
        ]
        return "  ".join([*cells, row[-1]]).rstrip()

    return [line(header), *map(line, rows)]


def render(workload: str, events: Sequence[AnyJournalEvent], full: bool | None = None) -> list[str]:
    """The lines ``gangway trace`` prints: the trace id, then the timeline in full (small
    workloads, or asked) or a row per step with per-gang latencies."""
    timeline = entries(events)
    if not timeline:
        return [f"{workload}: nothing journaled (not observed yet, or the journal expired)"]
    ids = trace_ids(events)
    lines = [
        f"{workload}: {len(timeline)} journal entries over {_seconds(timeline[-1].offset)}",
        f"trace id: {', '.join(ids) if ids else '(none recorded)'}",
        "",
    ]
    if full or (full is None and len(timeline) <= FULL_TIMELINE_LIMIT):
        rows = [
            (
                f"{e.offset:.3f}s",
                "" if e.took is None else f"+{e.took:.3f}s",
                e.service,
                e.step,
                e.gang,
                e.detail,
            )
            for e in timeline
        ]
        header = ("at", "took", "service", "step", "gang", "detail")
        return lines + table(header, rows, right_until=2)
    steps = [
        (
            row.step,
            str(row.count),
            _seconds(row.first),
            _seconds(row.last),
            _seconds(row.took_p50),
            _seconds(row.took_p99),
            ", ".join(row.services),
        )
        for row in summarise(timeline)
    ]
    columns = ("step", "count", "first", "last", "took p50", "took p99", "service")
    lines += table(columns, steps, right_from=1)
    lines.append("")
    lines.append("per gang, from the PodCliqueSet observed:")
    for step in ("PodGangCreated", "PodsCreated", "PodGangInitialized", "GatesLifted"):
        latencies = list(gang_latencies(events, step).values())
        if latencies:
            lines.append(
                f"  {step:<20} p50 {_seconds(percentile(latencies, 50))}  "
                f"p99 {_seconds(percentile(latencies, 99))}  max {_seconds(max(latencies))}"
                f"  ({len(latencies)} gangs)"
            )
    lines.append("(--all prints every entry)")
    return lines
