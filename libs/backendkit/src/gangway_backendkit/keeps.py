"""The usual backend: what ``resources()`` lists is what it keeps. The kit writes each
manifest through :meth:`BackendContext.ensure`, in the order listed (a Workload before its
PodGroups), and reports them; the backend says how each kind is written (``write_as``) and
what to say about the result (``describe``). A step of the backend's own before the writes
(KAI's Topology) goes in ``before_ensure``; nothing else takes a second path.

What the backend keeps for a PodGang, by name (``kept``), the kit deletes when the PodGang
goes, and — once a gang is made again (``gangway_contracts.incarnations``) — what it kept
for the gang's previous incarnation: the old gang's objects never outlive it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import msgspec

from gangway_backendkit.context import BackendContext
from gangway_backendkit.converge import Keep
from gangway_backendkit.manifest import Manifest
from gangway_backendkit.protocol import NotYet, Synced
from gangway_contracts import labels
from gangway_contracts.grove import PodCliqueSet, PodGang, podcliqueset_of
from gangway_contracts.incarnations import incarnation_of
from gangway_contracts.records import ObjectRecord
from gangway_contracts.why import Verdict
from gangway_runtime.kube import ApiResource


@dataclass(frozen=True)
class Write:
    """How one kind of the backend's resources is written."""

    resource: ApiResource
    keep: Keep | None = None  # what the scheduler manages once the object exists
    immutable_spec: bool = False  # a changed spec is deleted and created again


class KeepsResources(ABC):
    name: str
    # resources() needs the PodGang's PodCliqueSet (a queue label): the kit reads it from
    # the store and waits (NotYet) while the watcher has not mirrored it yet.
    reads_podcliqueset: ClassVar[bool] = False

    @abstractmethod
    def resources(self, podgang: PodGang, podcliqueset: PodCliqueSet | None) -> list[Manifest]:
        """The scheduler objects for ``podgang``, in the order they are written."""

    @abstractmethod
    def write_as(self, manifest: Manifest) -> Write:
        """How ``manifest`` (one of ``resources()``) is written."""

    @abstractmethod
    def kept(self, podgang: PodGang) -> list[tuple[ApiResource, str]]:
        """(resource, name) of each object the backend keeps for ``podgang`` (its names for
        the PodGang's incarnation: ``converge.gang_object_name``)."""

    def describe(self, podgang: PodGang, manifests: list[Manifest]) -> str:
        """The backend's words about what it keeps, before the list of changes."""
        return ""

    async def before_ensure(self, podgang: PodGang, ctx: BackendContext) -> None:
        """A step of the backend's own before its resources are written."""
        return

    def scheduler_view(
        self, podgang: PodGang, objects: Mapping[str, Sequence[Mapping[str, Any]]]
    ) -> Verdict | None:
        """None: the scheduler's objects say nothing the pods do not (their PodScheduled
        condition carries its words)."""
        return None

    async def sync_podgang(self, podgang: PodGang, ctx: BackendContext) -> Synced:
        meta = podgang.metadata
        podcliqueset = None
        if self.reads_podcliqueset:
            podcliqueset = await ctx.podcliqueset(meta.namespace, podcliqueset_of(meta))
            if podcliqueset is None:  # the watcher mirrors it shortly
                raise NotYet(f"PodCliqueSet of {meta.namespace}/{meta.name} not in the store yet")
        manifests = self.resources(podgang, podcliqueset)
        await self.before_ensure(podgang, ctx)
        kept: list[str] = []
        changes: list[str] = []
        for manifest in manifests:
            write = self.write_as(manifest)
            change = await ctx.ensure(
                write.resource, manifest, keep=write.keep, immutable_spec=write.immutable_spec
            )
            kind, name = manifest["kind"], manifest["metadata"]["name"]
            kept.append(f"{kind} {meta.namespace}/{name}")
            changes.append(f"{kind} {name} ({change})")
        if (incarnation := incarnation_of(meta.annotations)) > 0:
            await self._delete_kept(_as_incarnation(podgang, incarnation - 1), ctx)
        said = [s for s in (self.describe(podgang, manifests), ", ".join(changes)) if s]
        return Synced(resources=kept, message=": ".join(said) or Synced().message)

    async def on_podgang_delete(self, last: ObjectRecord, ctx: BackendContext) -> None:
        podgang = msgspec.json.decode(last.object, type=PodGang)
        await self._delete_kept(podgang, ctx, owner_uid=last.uid)  # the record's: the one gone

    async def _delete_kept(
        self, podgang: PodGang, ctx: BackendContext, owner_uid: str | None = None
    ) -> None:
        meta = podgang.metadata
        for resource, name in self.kept(podgang):
            await ctx.delete_kept(resource, meta.namespace, name, owner_uid or meta.uid)


def _as_incarnation(podgang: PodGang, incarnation: int) -> PodGang:
    """The PodGang as it was in an earlier incarnation (what its objects were named for)."""
    meta = podgang.metadata
    annotations = {**meta.annotations, labels.INCARNATION: str(incarnation)}
    return msgspec.structs.replace(
        podgang, metadata=msgspec.structs.replace(meta, annotations=annotations)
    )
