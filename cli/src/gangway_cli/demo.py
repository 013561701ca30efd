"""``gangway demo``: apply sample PodCliqueSets (one per backend, one with a scaling group)
to the cluster ``gangway up`` runs, and show each one's progress until it is done:
PodGangs created, pods created, gangs Initialized, scheduling gates lifted, pods bound to
nodes by the scheduler, pods Running.

With Ready nodes, and the scheduler a sample names served (KAI's Queues for the KAI sample,
scheduler-plugins' PodGroups for the Coscheduling one, Koordinator's and Volcano's PodGroups
for theirs, Kueue's Workloads for the one in a Kueue LocalQueue, which the demo makes for
gangway up's ClusterQueue), the sample
is done when every pod runs: a gang of a scaling group beyond its minAvailable is released
once its base gang is scheduled. Without nodes a sample ends at gates lifted, and the scaled
gangs that wait for their base gang are counted as waiting, not as missing. A sample refused
(by admission, or for want of its scheduler) says why, and the demo exits non-zero.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final, TextIO

import msgspec
import yaml

from gangway_backend_coscheduling.translate import PODGROUPS as COSCHEDULING_PODGROUPS
from gangway_backend_kai.translate import QUEUES
from gangway_backend_koordinator.translate import PODGROUPS as KOORDINATOR_PODGROUPS
from gangway_backend_volcano.translate import PODGROUPS as VOLCANO_PODGROUPS
from gangway_cli.cluster import apply
from gangway_contracts import labels
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.pods import Pod
from gangway_localcluster.kueue import DEMO_QUEUE, local_queue
from gangway_localcluster.nodes import is_ready
from gangway_podgang.decide import initialized_status
from gangway_podgang.plan import Plan, plan_podgangs
from gangway_runtime.apiclient import api_client
from gangway_runtime.kube import ApiResource, Kube, KubeError
from gangway_runtime.status import PODCLIQUESETS, PODGANGS, PODS
from gangway_stage_kueue.workload import WORKLOADS as KUEUE_WORKLOADS

NAMESPACES: Final = ApiResource("", "v1", "namespaces", namespaced=False)
NODES: Final = ApiResource("", "v1", "nodes", namespaced=False)
SAMPLES: Final = (
    "default-scheduler.yaml",
    "kai-scheduler.yaml",
    "coscheduling.yaml",
    "koordinator.yaml",
    "volcano.yaml",
    "scaling-group.yaml",
    "kueue.yaml",
)


# A sample that needs a second scheduler: what the API server serves where it is installed,
# and what the demo says where it is not.
def _podgroups_of(scheduler: str, podgroups: ApiResource) -> tuple[ApiResource, str]:
    reason = f"the API server serves no {podgroups.plural}.{podgroups.group}"
    return podgroups, f"{scheduler} is not installed ({reason})"


NEEDS: Final = {
    "kai-scheduler.yaml": (QUEUES, "KAI is not installed (the API server serves no KAI Queues)"),
    "coscheduling.yaml": _podgroups_of("scheduler-plugins", COSCHEDULING_PODGROUPS),
    "koordinator.yaml": _podgroups_of("Koordinator", KOORDINATOR_PODGROUPS),
    "volcano.yaml": _podgroups_of("Volcano", VOLCANO_PODGROUPS),
    "kueue.yaml": (KUEUE_WORKLOADS, "Kueue is not installed (the API server serves no Workloads)"),
}
LOCAL_QUEUES: Final = ApiResource(KUEUE_WORKLOADS.group, KUEUE_WORKLOADS.version, "localqueues")
FIELD_MANAGER: Final = "gangway-demo"
BAR: Final = 12


def add_arguments(demo: argparse.ArgumentParser) -> None:
    demo.add_argument("--kubeconfig", type=Path, help="default: $KUBECONFIG (gangway up prints it)")
    demo.add_argument("--namespace", default="gangway-demo")
    demo.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for all")
    demo.set_defaults(run=run)


def sample(name: str, namespace: str) -> dict[str, Any]:
    text = resources.files("gangway_cli.samples").joinpath(name).read_text()
    doc: dict[str, Any] = yaml.safe_load(text)
    doc["metadata"]["namespace"] = namespace
    return doc


@dataclass
class Progress:
    """One PodCliqueSet: what its plan asks for, and what the API server shows so far."""

    name: str
    plan: Plan
    gangs: int = 0
    pods: int = 0
    initialized: int = 0
    lifted: int = 0
    bound: int = 0
    running: int = 0
    refused: str = ""
    placed_here: bool = True  # a scheduler here binds its pods to nodes

    @property
    def base_pods(self) -> int:
        return sum(
            len(g.pods)
            for gang in self.plan.gangs
            if gang.base == gang.name
            for g in gang.podgroups
        )

    @property
    def planned_pods(self) -> int:
        return sum(len(g.pods) for gang in self.plan.gangs for g in gang.podgroups)

    @property
    def done(self) -> bool:
        planned = len(self.plan.gangs)
        if self.refused:
            return True
        created = (
            self.gangs == planned and self.pods == self.planned_pods and self.initialized == planned
        )
        if self.placed_here:
            return created and self.running == self.planned_pods
        return created and self.lifted >= self.base_pods

    def line(self) -> str:
        if self.refused:
            return f"{self.name:<16} refused: {self.refused}"
        planned, pods = len(self.plan.gangs), self.planned_pods
        line = (
            f"{self.name:<16} gangs {_bar(self.gangs, planned)}  "
            f"pods {_bar(self.pods, pods)}  "
            f"initialized {_bar(self.initialized, planned)}  "
            f"gates lifted {_bar(self.lifted, pods)}"
        )
        if self.placed_here:
            return f"{line}  bound {_bar(self.bound, pods)}  running {_bar(self.running, pods)}"
        waiting = pods - max(self.lifted, self.base_pods)
        note = f"  ({waiting} wait for their base gang)" if self.done and waiting else ""
        return f"{line}{note}  (no Ready nodes here)"


def _bar(value: int, total: int) -> str:
    filled = BAR * value // total if total else BAR
    return f"{'█' * filled}{'░' * (BAR - filled)} {value}/{total}"


async def _items(kube: Kube, path: str, selector: str) -> list[dict[str, Any]]:
    body = await kube.request("GET", path, [("labelSelector", selector)])
    found: list[dict[str, Any]] = msgspec.json.decode(body)["items"]
    return found


async def observe(kube: Kube, namespace: str, progress: Progress) -> None:
    """Read through the same views and rules the podgang service decides with."""
    selector = f"{labels.PART_OF}={progress.name}"
    gangs = [
        from_object(g, PodGang) for g in await _items(kube, PODGANGS.path(namespace), selector)
    ]
    pods = [from_object(p, Pod) for p in await _items(kube, PODS.path(namespace), selector)]
    progress.gangs = len(gangs)
    progress.initialized = sum(initialized_status(g) is True for g in gangs)
    progress.pods = len(pods)
    progress.lifted = sum(not p.is_gated(labels.PODGANG_PENDING_CREATION_GATE) for p in pods)
    progress.bound = sum(p.is_scheduled for p in pods)
    progress.running = sum(p.status.phase == "Running" for p in pods)


class Screen:
    """Redraws the bars in place on a terminal; elsewhere prints a line when one changes."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self.drawn: list[str] = []

    def show(self, lines: list[str]) -> None:
        if self.tty:
            if self.drawn:
                self.out.write(f"\x1b[{len(self.drawn)}F")
            self.out.write("".join(f"\x1b[2K{line}\n" for line in lines))
        else:
            for i, line in enumerate(lines):
                if i >= len(self.drawn) or self.drawn[i] != line:
                    self.out.write(line + "\n")
        self.out.flush()
        self.drawn = lines


async def _prepare(kube: Kube, namespace: str, out: TextIO) -> list[Progress]:
    made = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    await apply(kube, NAMESPACES, made, FIELD_MANAGER)
    # The KAI sample's queue is gangway up's (KAI's default-queue): a cluster without it
    # refuses the sample at admission, and the demo says so.
    missing = {name: why for name, (what, why) in NEEDS.items() if not await kube.serves(what)}
    if "kueue.yaml" not in missing:  # its LocalQueue, for gangway up's ClusterQueue
        _, queue = local_queue(namespace, DEMO_QUEUE, DEMO_QUEUE)
        await apply(kube, LOCAL_QUEUES, queue, FIELD_MANAGER)
    has_nodes = await _ready_nodes(kube) > 0
    found = []
    for name in SAMPLES:
        doc = sample(name, namespace)
        pcs = from_object(doc, PodCliqueSet)
        progress = Progress(pcs.metadata.name, plan_podgangs(pcs, None), placed_here=has_nodes)
        if name in missing:
            progress.refused = missing[name]
        else:
            try:
                await apply(kube, PODCLIQUESETS, doc, FIELD_MANAGER)
            except KubeError as exc:  # admission says why
                progress.refused = str(exc)
        found.append(progress)
    out.write(f"applied {len(found)} PodCliqueSets in namespace {namespace}:\n")
    return found


async def _ready_nodes(kube: Kube) -> int:
    nodes = msgspec.json.decode(await kube.request("GET", NODES.path()))["items"]
    return sum(map(is_ready, nodes))


async def _demo(args: argparse.Namespace, out: TextIO) -> bool:
    kube = Kube(await api_client(args.kubeconfig))
    async with kube:
        progress = await _prepare(kube, args.namespace, out)
        screen = Screen(out)
        deadline = time.monotonic() + args.timeout
        while True:
            for p in progress:
                if not p.refused:
                    await observe(kube, args.namespace, p)
            screen.show([p.line() for p in progress])
            if all(p.done for p in progress) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
    refused = [p for p in progress if p.refused]
    done = all(p.done for p in progress) and not refused
    if refused:
        names = ", ".join(p.name for p in refused)
        out.write(f"not done: {len(refused)} of {len(progress)} refused ({names}), see above.\n")
    else:
        out.write("done.\n" if done else f"not done after {args.timeout:.0f} s.\n")
    out.write(f"Each one's timeline: gangway trace {args.namespace}/<name>\n")
    return done


def run(args: argparse.Namespace) -> int:
    try:
        done = asyncio.run(_demo(args, sys.stdout))
    except (OSError, KubeError) as exc:  # a bad kubeconfig is an OSError (KubeconfigError)
        print(f"demo: {exc}", file=sys.stderr)
        return 1
    return 0 if done else 1
