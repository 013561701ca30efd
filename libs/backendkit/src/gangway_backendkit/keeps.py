"""The usual backend: what ``resources()`` lists is what it keeps. The kit writes each
manifest through :meth:`BackendContext.ensure`, in the order listed (a Workload before its
PodGroups), and reports them; the backend says how each kind is written (``write_as``) and
what to say about the result (``describe``). A step of the backend's own before the writes
(KAI's Topology) goes in ``before_ensure``; nothing else takes a second path."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from gangway_backendkit.context import BackendContext
from gangway_backendkit.converge import Keep
from gangway_backendkit.manifest import Manifest
from gangway_backendkit.protocol import NotYet, Synced
from gangway_contracts.grove import PodCliqueSet, PodGang, podcliqueset_of
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

    def describe(self, podgang: PodGang, manifests: list[Manifest]) -> str:
        """The backend's words about what it keeps, before the list of changes."""
        return ""

    async def before_ensure(self, podgang: PodGang, ctx: BackendContext) -> None:
        """A step of the backend's own before its resources are written."""
        return

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
        said = [s for s in (self.describe(podgang, manifests), ", ".join(changes)) if s]
        return Synced(resources=kept, message=": ".join(said) or Synced().message)
