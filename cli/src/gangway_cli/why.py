"""``gangway why NAMESPACE/NAME``: why a PodCliqueSet's gangs are not running, one screen,
the same words on every scheduler (``gangway_contracts.why``).

For each gang: its phase, how many of its pods are scheduled and ready against its
minimum, the reason and the scheduler's own words, and what a user can do next. The
reason is the PodGang's ``Scheduled`` condition where podgang has written one (once the
scheduler acted, or the backend refused the gang); before that, what the PodGang and its
pods show: gates on and on what, or the scheduler not having tried yet. Reads the API
server (``--kubeconfig``, else ``$KUBECONFIG``); ``-o json`` for scripts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple, TextIO

import msgspec

from gangway_cli.arguments import add_workload
from gangway_cli.timeline import table
from gangway_contracts import labels, why
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.k8s import Condition
from gangway_contracts.pods import Pod
from gangway_runtime.apiclient import api_client
from gangway_runtime.kube import Kube, KubeError
from gangway_runtime.status import PODCLIQUESETS, PODGANGS, PODS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workload(parser)
    parser.add_argument("--kubeconfig", type=Path, help="default: $KUBECONFIG")
    parser.add_argument(
        "-o", "--output", choices=("table", "json"), default="table", help="default: table"
    )
    parser.set_defaults(run=run)


@dataclass(frozen=True)
class GangState:
    """One gang as a user asks about it."""

    name: str
    phase: str
    pods: int
    minimum: int  # the sum of its podgroups' minReplicas
    scheduled: int
    ready: int
    reason: str
    message: str
    next_step: str
    waiting_on: str = ""  # the base gang a scaled gang's gates wait for
    nodes: tuple[str, ...] = ()  # where its pods are bound
    # What its backend made of it (BackendSynced's words): e.g. whether the scheduler
    # places the gang whole or each podgroup on its own.
    written_as: str = ""

    @property
    def placed(self) -> bool:
        return self.reason == why.SCHEDULED


def gang_state(podgang: PodGang, pods: list[Pod], podgangs: dict[str, PodGang]) -> GangState:
    """One PodGang and its pods (``podgangs``: the workload's, for a scaled gang's base)."""
    reason, message, waiting_on = _reason(podgang, pods, podgangs)
    return GangState(
        name=podgang.metadata.name,
        phase=(podgang.status.phase if podgang.status else None) or "Pending",
        pods=len(pods),
        minimum=sum(group.min_replicas for group in podgang.spec.podgroups),
        scheduled=sum(pod.is_scheduled for pod in pods),
        ready=sum(pod.is_ready for pod in pods),
        reason=reason,
        message=message,
        next_step="" if reason == why.SCHEDULED else why.NEXT_STEP.get(reason, ""),
        waiting_on=waiting_on,
        nodes=tuple(sorted({pod.spec.node_name for pod in pods if pod.spec.node_name})),
        written_as=synced.message if (synced := _synced(podgang)) is not None else "",
    )


def _synced(podgang: PodGang) -> Condition | None:
    found = podgang.current_condition(labels.BACKEND_SYNCED)
    return found if found is not None and found.status == "True" else None


class _Reason(NamedTuple):
    reason: str
    message: str
    waiting_on: str = ""


def _reason(podgang: PodGang, pods: list[Pod], podgangs: dict[str, PodGang]) -> _Reason:
    said = podgang.current_condition(labels.SCHEDULED)
    if said is not None:  # podgang's verdict, from the scheduler on
        return _Reason(said.reason, said.message)
    held = _not_released(podgang)
    if held is not None:
        return _Reason(*held)
    if any(pod.is_gated(labels.PODGANG_PENDING_CREATION_GATE) for pod in pods):
        base = podgang.metadata.labels.get(labels.BASE_PODGANG, "")
        if base and base != podgang.metadata.name and not _placed(podgangs.get(base)):
            waits = f"scheduling gates on: its base gang {base} is not scheduled"
            return _Reason(why.GATED, waits, base)
        return _Reason(why.GATED, "scheduling gates coming off")
    blocked = podgang.condition(why.SCHEDULER_BLOCKED)
    if blocked is not None and blocked.status == "True":
        return _Reason(blocked.reason, blocked.message)
    return _Reason(why.AWAITING_SCHEDULER, "the scheduler has not placed the gang yet")


def _not_released(podgang: PodGang) -> tuple[str, str] | None:
    """What keeps the gates on before podgang may lift them: its pods, its backend."""
    initialized = podgang.current_condition(labels.INITIALIZED)
    if initialized is None or initialized.status != "True":
        return why.GATED, "scheduling gates on: its pods are being created"
    synced = podgang.current_condition(labels.BACKEND_SYNCED)
    if synced is not None and synced.status == "False":
        return why.BACKEND_NOT_SYNCED, f"{synced.reason}: {synced.message}"
    if synced is None or synced.status != "True":
        backend = podgang.metadata.labels.get(labels.SCHEDULER_NAME, "its backend")
        return why.GATED, f"scheduling gates on: {backend} has not synced it yet"
    return None


def _placed(podgang: PodGang | None) -> bool:
    found = podgang.current_condition(labels.SCHEDULED) if podgang is not None else None
    return found is not None and found.status == "True"


@dataclass(frozen=True)
class Workload:
    """A PodCliqueSet's own word (its conditions not True) and its gangs."""

    namespace: str
    name: str
    problems: list[str]
    gangs: list[GangState]


async def read(kube: Kube, namespace: str, name: str) -> Workload:
    pcs = from_object(
        msgspec.json.decode(await kube.request("GET", PODCLIQUESETS.path(namespace, name))),
        PodCliqueSet,
    )
    selector = [("labelSelector", f"{labels.PART_OF}={name}")]
    found = msgspec.json.decode(await kube.request("GET", PODGANGS.path(namespace), selector))
    podgangs = {g.metadata.name: g for g in (from_object(i, PodGang) for i in found["items"])}
    listed = msgspec.json.decode(await kube.request("GET", PODS.path(namespace), selector))
    pods: dict[str, list[Pod]] = {}
    for pod in (from_object(i, Pod) for i in listed["items"]):
        pods.setdefault(pod.metadata.labels.get(labels.PODGANG, ""), []).append(pod)
    problems = [
        f"{c.type}: {c.reason}: {c.message}"
        for c in (pcs.status.conditions if pcs.status else [])
        if c.status != "True" and c.type != "UpdateInProgress"
    ]
    gangs = [gang_state(g, pods.get(n, []), podgangs) for n, g in sorted(podgangs.items())]
    return Workload(namespace, name, problems, gangs)


def show(workload: Workload, out: TextIO) -> None:
    gangs = workload.gangs
    waiting = [g for g in gangs if not g.placed]
    out.write(
        f"{workload.namespace}/{workload.name}: {len(gangs)} gangs, {len(waiting)} not scheduled\n"
    )
    for problem in workload.problems:
        out.write(f"  {problem}\n")
    if not gangs:
        return
    rows = [
        (
            g.name,
            g.phase,
            f"{g.scheduled}/{g.pods} (min {g.minimum})",
            f"{g.ready}/{g.pods}",
            g.reason,
        )
        for g in gangs
    ]
    out.write("\n".join(table(("gang", "phase", "scheduled", "ready", "reason"), rows)) + "\n")
    for gang in waiting:
        out.write(f"\n{gang.name}: {gang.reason}\n  {gang.message}\n")
        if gang.next_step:
            out.write(f"  next: {gang.next_step}\n")
        if gang.written_as:
            out.write(f"  backend: {gang.written_as}\n")


def as_json(workload: Workload) -> dict[str, Any]:
    return asdict(workload)


async def _why(args: argparse.Namespace) -> Workload:
    async with Kube(await api_client(args.kubeconfig)) as kube:
        return await read(kube, *args.workload)


def run(args: argparse.Namespace) -> int:
    namespace, name = args.workload
    try:
        workload = asyncio.run(_why(args))
    except KubeError as exc:
        if exc.status == 404:
            print(f"why: no PodCliqueSet {namespace}/{name}", file=sys.stderr)
        else:
            print(f"why: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a bad kubeconfig is an OSError (KubeconfigError)
        print(f"why: {exc}", file=sys.stderr)
        return 1
    if args.output == "json":
        json.dump(as_json(workload), sys.stdout, indent=2)
        print()
    else:
        show(workload, sys.stdout)
    return 0
