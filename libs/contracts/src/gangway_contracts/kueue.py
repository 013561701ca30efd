"""Kueue in front of any scheduler: what the Kueue stage, podgang and admission agree on.

A PodCliqueSet labelled ``kueue.x-k8s.io/queue-name`` (Grove's docs put it there) has its
gangs admitted by Kueue against quota before their gates lift: the Kueue stage
(``services/stage-kueue``) keeps one Kueue ``Workload`` per PodGang — one podSet per podgroup
— and writes what Kueue decided on the PodGang as the :data:`QUEUE_ADMITTED` condition.
podgang lifts a labelled gang's gates only while that condition holds at the gang's
generation, and stops the gang whole (its placed pods deleted, made again gated) when it no
longer does: Kueue evicted or preempted it. Kueue decides *whether now*; the PodCliqueSet's
scheduler, through its backend, decides *where*.

The stage is Kueue's integration for the gang, as Kueue's own job integrations are for
theirs: it makes the Workload, and clears its quota reservation once the evicted gang has
stopped. The pods never carry Kueue's labels, so Kueue's pod integration (on by default in
Kueue's own install) never takes them for workloads of their own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from gangway_contracts import kueue_topology
from gangway_contracts.errors import FieldError, field_path
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.mirrored import MANAGED_BY_GANGWAY_SELECTOR, MirroredResource

# Kueue's label for a workload's LocalQueue: on the PodCliqueSet (its PodGangs carry the
# PodCliqueSet's labels, its pods do not).
QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
# The PodGang condition the stage owns: True while Kueue admits the gang's Workload.
QUEUE_ADMITTED: Final = "QueueAdmitted"
ADMITTED: Final = "Admitted"
# The stage's NATS user, its durable consumer's name and the owner token of its Workloads.
STAGE: Final = "stage-kueue"
GROUP: Final = "kueue.x-k8s.io"
VERSION: Final = "v1beta2"
WORKLOADS: Final = MirroredResource(
    kind=f"workloads.{GROUP}",
    group=GROUP,
    versions=(VERSION,),
    plural="workloads",
    label_selector=MANAGED_BY_GANGWAY_SELECTOR,
    backend=STAGE,
)
# Kueue's limit on a Workload's podSets (its CRD's maxItems): one per podgroup of a gang.
MAX_PODSETS: Final = 18
_NAME: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def queue_of(object_labels: Mapping[str, str]) -> str | None:
    """The LocalQueue a PodCliqueSet or its PodGang names; None: Kueue is not in front."""
    return object_labels.get(QUEUE_LABEL) or None


def largest_gang(pcs: PodCliqueSet) -> int:
    """The most podgroups one of the PodCliqueSet's gangs has: its base gang (standalone
    cliques, and each scaling group's cliques once per replica below minAvailable) or a
    scaled gang (one scaling group's cliques)."""
    template = pcs.spec.template
    grouped = {name for g in template.pod_clique_scaling_groups for name in g.clique_names}
    base = sum(1 for clique in template.cliques if clique.name not in grouped)
    base += sum(len(g.clique_names) * g.min_available for g in template.pod_clique_scaling_groups)
    scaled = max((len(g.clique_names) for g in template.pod_clique_scaling_groups), default=0)
    return max(base, scaled)


def problems(pcs: PodCliqueSet, enabled: bool, topology: bool = False) -> list[FieldError]:
    """Why Kueue cannot admit this PodCliqueSet's gangs, by field; none when it names no
    queue or Kueue can. ``topology``: Kueue also chooses their domains
    (:mod:`gangway_contracts.kueue_topology`), which it can for some packings only."""
    queue = queue_of(pcs.metadata.labels)
    errors = [
        FieldError(
            field=field_path("spec", "template", "cliques", i, "labels") + f"[{QUEUE_LABEL}]",
            reason="name the queue on the PodCliqueSet's metadata.labels: on a pod, Kueue's "
            "pod integration would admit each pod on its own, not the gang",
        )
        for i, clique in enumerate(pcs.spec.template.cliques)
        if QUEUE_LABEL in clique.labels
    ]
    if queue is None:
        return errors
    at = f"metadata.labels[{QUEUE_LABEL}]"
    if not enabled:
        reason = (
            f'"{queue}": Kueue is not enabled in Gangway\'s configuration (kueue.enabled: '
            "true runs the stage that has Kueue admit each gang)"
        )
        return [*errors, FieldError(field=at, reason=reason)]
    if not _NAME.match(queue) or len(queue) > 63:
        errors.append(FieldError(field=at, reason=f'"{queue}" is not a LocalQueue name'))
    if (largest := largest_gang(pcs)) > MAX_PODSETS:
        reason = (
            f"a gang of {largest} podgroups: Kueue admits a Workload of at most "
            f"{MAX_PODSETS} podSets, one per podgroup"
        )
        errors.append(FieldError(field=field_path("spec", "template", "cliques"), reason=reason))
    if topology:
        errors += kueue_topology.pcs_problems(pcs)
    return errors
