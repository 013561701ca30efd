"""A PodCliqueSet's PodCliques and scaling groups, written once a reconcile's gang writes
are done: made, set back to the template, their status replaced where it moved, the stale
deleted (``cliques.py`` decides; here it is written). Never in a gang's way: no gang waits
for them. What this process wrote and the read model does not show yet is not written again
(a create again was a 409, a status again a write for nothing)."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from gangway_contracts.subjects import Kind
from gangway_podgang.cliques import cliques_to_write, statuses_to_write
from gangway_podgang.step import Step
from gangway_podgang.writes import Actuator
from gangway_runtime.objects import OwnWrites
from gangway_runtime.status import now

# (kind, namespace, name) of one object
Key = tuple[str, str, str]


class CliqueWriter:
    def __init__(self, actuator: Actuator) -> None:
        self.actuator = actuator
        # What this process last wrote to each object (the digest of the create, the spec or
        # the status), until the mirror shows a version as new. Bounded: one forgotten costs
        # one write.
        self._written: OwnWrites[Key, str] = OwnWrites(at_most=50_000)

    async def write(self, step: Step) -> None:
        pcs, plan, workload = step.pcs, step.plan, step.workload
        if step.unresolved or step.too_large:
            return  # nothing was planned: what exists is kept, as its gangs are
        ns = pcs.metadata.namespace
        versions: dict[tuple[str, str], str] = {
            **{
                (Kind.PODCLIQUE, n): c.metadata.resource_version
                for n, c in workload.podcliques.items()
            },
            **{
                (Kind.PODCLIQUESCALINGGROUP, n): g.metadata.resource_version
                for n, g in workload.scaling_groups.items()
            },
        }

        def fresh(kind: str, name: str, what: Any) -> bool:
            shown = versions.get((kind, name), "")
            return self._written.unshown((kind, ns, name), shown) != _digest(what)

        writes, deletes = cliques_to_write(
            pcs, plan, cliques=workload.podcliques, groups=workload.scaling_groups
        )
        statuses = statuses_to_write(
            pcs,
            plan,
            cliques=workload.podcliques,
            groups=workload.scaling_groups,
            pods=workload.pods,
            now=now(),
        )
        made, said = await self.actuator.write_cliques(
            [w for w in writes if fresh(w.kind, w.name, w.create or w.spec)],
            [s for s in statuses if fresh(s.kind, s.name, s.status)],
            deletes,  # a delete again is a 404, taken as done
        )
        for write, version in made:
            what = write.create or write.spec
            self._written.remember((write.kind, ns, write.name), version, _digest(what))
        for status, version in said:
            key = (status.kind, ns, status.name)
            self._written.remember(key, version, _digest(status.status))


def _digest(what: Any) -> str:
    return hashlib.sha256(msgspec.json.encode(what, order="sorted")).hexdigest()
