"""The journal's entries of a PodCliqueSet that no single write makes: its plan, once per
generation, and every gang step the cluster shows done whose entry a crash lost."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import datetime
from typing import Any

from gangway_contracts import events, labels
from gangway_contracts.k8s import NamespacedName
from gangway_podgang import progress
from gangway_podgang.report import Reporter
from gangway_podgang.step import Step


async def journal_plan(reporter: Reporter, step: Step) -> None:
    """Journal the plan once per generation: the status says a generation was seen, and
    the journal stores the entry once under its generation (a retry or a replica that
    planned it too within the duplicate window adds nothing)."""
    meta = step.pcs.metadata
    status = step.pcs.status
    if status is not None and status.observed_generation == meta.generation:
        return
    names = [gang.name for gang in step.plan.gangs]
    event = events.PodGangPlanned(**reporter.common(step.pcs), podgangs=names)
    await reporter.journal(event, once=f"planned/{meta.uid}/{meta.generation}")


async def journal_what_is_done(reporter: Reporter, step: Step) -> None:
    """Every step the cluster shows done for a gang has its journal entry: one lost to a
    crash between a write and its entry is made up for here (journaled, once, when
    found). Entries this process put or found cost a set lookup, no event built."""
    writer = reporter.journal_writer
    common = reporter.common(step.pcs)
    workload: NamespacedName = common["workload"]
    found: list[Awaitable[None]] = []
    for gang in step.plan.gangs:
        live = step.workload.podgangs.get(gang.name)
        if live is None or not live.metadata.creation_timestamp:
            continue
        names = [name for _, _, name in gang.pods]
        pods = [step.workload.pods.get(name) for name in names]
        about = {**common, "podgang": gang.name}
        done: list[tuple[type[events.JournalEvent], dict[str, Any]]] = [
            (events.PodGangCreated, {**about, "backend": step.backend})
        ]
        if all(pods):
            done.append((events.PodsCreated, {**about, "pods": names}))
        if progress.initialized_status_of(live) is True:
            done.append((events.PodGangInitialized, about))
        gate = labels.PODGANG_PENDING_CREATION_GATE
        if all(pod is not None and not pod.is_gated(gate) for pod in pods):
            done.append((events.GatesLifted, {**about, "pods": names}))
        since = datetime.fromisoformat(live.metadata.creation_timestamp)
        found += [
            writer.ensure(kind(**fields), since)
            for kind, fields in done
            if writer.missing(kind, workload, gang.name)
        ]
    await asyncio.gather(*found)
