"""The durable consumers on the OBJECTS stream: which service consumes what, under which name.

One list for the three places that must agree: the setup step creates these consumers
(``gangway_runtime.streams.provision``), each service binds to its own, and the NATS
permissions let a service pull and acknowledge through its own alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from gangway_contracts import kueue
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.subjects import Kind, Subjects

# What podgang acts on; its read model also holds the ClusterTopologyBindings.
PODGANG_KINDS: Final = (
    Kind.PODCLIQUESET,
    Kind.PODGANG,
    Kind.POD,
    Kind.SERVICE,
    Kind.PODCLIQUE,
    Kind.PODCLIQUESCALINGGROUP,
    Kind.HPA,
)


@dataclass(frozen=True)
class Durable:
    name: str  # also the service's dead-letter subject and its leases' bucket
    filters: tuple[str, ...]


def podgang(subjects: Subjects) -> Durable:
    filters = tuple(subjects.objects_filter(kind) for kind in PODGANG_KINDS)
    return Durable(subjects.service_name("podgang"), filters)


def backend(subjects: Subjects, name: str) -> Durable:
    """A backend's PodGangs and every resource it owns: any kind under its name."""
    return Durable(subjects.backend_service_name(name), (subjects.objects_filter("*", name),))


def stage_kueue(subjects: Subjects, topology: bool = False) -> Durable:
    """The Kueue stage: every PodGang (whichever backend owns it) and its own Workloads;
    with Kueue's topology assignment on, the pods too (one made again after its gang was
    admitted waits gated for its domain)."""
    filters = [subjects.objects_filter(Kind.PODGANG), subjects.objects_filter("*", kueue.STAGE)]
    if topology:
        filters.append(subjects.objects_filter(Kind.POD, ""))
    return Durable(subjects.service_name(kueue.STAGE), tuple(filters))


def durables(subjects: Subjects, config: SchedulerConfig) -> list[Durable]:
    """Every durable consumer a configuration runs: podgang's, each enabled backend's and
    the Kueue stage's when it is enabled."""
    stages = [stage_kueue(subjects, config.kueue_topology)] if config.kueue else []
    return [podgang(subjects), *(backend(subjects, name) for name in config.enabled), *stages]
