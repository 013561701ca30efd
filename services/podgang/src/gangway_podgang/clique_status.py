"""The status of a PodCliqueSet's PodCliques and scaling groups: counted from the step a
reconcile ended with (no request), written once its writes are done, only what moved, and
not again while the read model does not show this process's last write of it."""

from __future__ import annotations

import hashlib

import msgspec

from gangway_podgang.cliques import StatusWrite, statuses_to_write
from gangway_podgang.step import Step
from gangway_podgang.writes import Actuator
from gangway_runtime.objects import OwnWrites
from gangway_runtime.status import now


class CliqueStatusWriter:
    def __init__(self, actuator: Actuator) -> None:
        self.actuator = actuator
        # (kind, namespace, name) → the digest of the status this process last wrote, until
        # the mirror shows it. Bounded: one forgotten costs one status write.
        self._written: OwnWrites[tuple[str, str, str], str] = OwnWrites(at_most=50_000)

    async def write(self, step: Step) -> None:
        workload = step.workload
        versions = {
            **{name: c.metadata.resource_version for name, c in workload.podcliques.items()},
            **{name: g.metadata.resource_version for name, g in workload.scaling_groups.items()},
        }
        found = statuses_to_write(
            step.pcs,
            step.plan,
            cliques=workload.podcliques,
            groups=workload.scaling_groups,
            pods=workload.pods,
            now=now(),
        )
        fresh = [
            write
            for write in found
            if self._written.unshown(_key(write), versions.get(write.name, "")) != _digest(write)
        ]
        for write, version in await self.actuator.write_statuses(fresh):
            self._written.remember(_key(write), version, _digest(write))


def _key(write: StatusWrite) -> tuple[str, str, str]:
    return write.kind, write.namespace, write.name


def _digest(write: StatusWrite) -> str:
    return hashlib.sha256(msgspec.json.encode(write.status, order="sorted")).hexdigest()
