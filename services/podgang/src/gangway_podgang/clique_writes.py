"""A PodCliqueSet's PodCliques and scaling groups (and the HPAs that scale them), written
once a reconcile's gang writes are done: made, set back to the template, their status
replaced where it moved, the stale deleted (``cliques.py`` and ``autoscalers.py`` decide;
here it is written). Never in a gang's way: no gang waits for them. What this process wrote
and the read model does not show yet is not written again (a create again was a 409, a
status again a write for nothing)."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from gangway_contracts.subjects import Kind
from gangway_podgang.autoscalers import autoscalers_to_write
from gangway_podgang.cliques import cliques_to_write, statuses_to_write
from gangway_podgang.step import Step
from gangway_podgang.writes import Actuator
from gangway_runtime.objects import OwnWrites
from gangway_runtime.status import now

# (kind, namespace, name, part) of one object: its object (create, spec) or its status,
# each remembered apart (a spec and a status write in one round).
Key = tuple[str, str, str, str]
OBJECT, STATUS = "object", "status"


class CliqueWriter:
    def __init__(self, actuator: Actuator) -> None:
        self.actuator = actuator
        # What this process last wrote to each part of each object (the digest of the create
        # or the spec; of the status), until the mirror shows a version as new. Bounded: one
        # forgotten costs one write.
        self._written: OwnWrites[Key, str] = OwnWrites(at_most=50_000)

    async def write(self, step: Step) -> None:
        pcs, plan, workload = step.pcs, step.plan, step.workload
        if step.unresolved or step.too_large:
            return  # nothing was planned: what exists is kept, as its gangs are
        ns = pcs.metadata.namespace
        versions: dict[tuple[str, str], str] = {
            **workload.gone,  # mirrored as deleted: a create remembered before is past
            **{
                (Kind.PODCLIQUE, n): c.metadata.resource_version
                for n, c in workload.podcliques.items()
            },
            **{
                (Kind.PODCLIQUESCALINGGROUP, n): g.metadata.resource_version
                for n, g in workload.scaling_groups.items()
            },
            **{(Kind.HPA, n): a.metadata.resource_version for n, a in workload.autoscalers.items()},
        }
        # What the mirror shows now is forgotten now, whether or not a write is decided for
        # it: an object deleted later is made again (a create remembered past its mirror
        # would read as "written, not shown yet" once the object is gone).
        if len(self._written):
            for (kind, name), shown in versions.items():
                for part in (OBJECT, STATUS):
                    self._written.unshown((kind, ns, name, part), shown)

        def fresh(kind: str, name: str, part: str) -> bool:
            shown = versions.get((kind, name), "")
            key = (kind, ns, name, part)
            return self._written.unshown(key, shown) != digests[kind, name, part]

        writes, deletes = cliques_to_write(
            pcs, plan, cliques=workload.podcliques, groups=workload.scaling_groups
        )
        hpa_writes, hpa_deletes = autoscalers_to_write(pcs, workload.autoscalers)
        writes, deletes = (*writes, *hpa_writes), (*deletes, *hpa_deletes)
        statuses = statuses_to_write(
            pcs,
            plan,
            cliques=workload.podcliques,
            groups=workload.scaling_groups,
            pods=workload.pods,
            now=now(),
        )
        # Digests taken before writing: a create goes out with the trace annotation added.
        digests = {
            **{(w.kind, w.name, OBJECT): _digest(w.create or w.spec) for w in writes},
            **{(s.kind, s.name, STATUS): _digest(s.status) for s in statuses},
        }
        made, said = await self.actuator.write_cliques(
            [w for w in writes if fresh(w.kind, w.name, OBJECT)],
            [s for s in statuses if fresh(s.kind, s.name, STATUS)],
            deletes,  # a delete again is a 404, taken as done
        )
        for kind, name, part, version in [
            *((w.kind, w.name, OBJECT, v) for w, v in made),
            *((s.kind, s.name, STATUS, v) for s, v in said),
        ]:
            self._written.remember((kind, ns, name, part), version, digests[kind, name, part])


def _digest(what: Any) -> str:
    return hashlib.sha256(msgspec.json.encode(what, order="sorted")).hexdigest()
