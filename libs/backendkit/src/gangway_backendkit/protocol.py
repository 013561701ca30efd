"""What a backend implements. Nothing else of Gangway's is needed to write one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from gangway_backendkit.manifest import Manifest
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.records import ObjectRecord
from gangway_contracts.rpc import (
    PreparePodsReply,
    PreparePodsRequest,
    ValidateReply,
    ValidateRequest,
)
from gangway_contracts.subjects import ObjectKey
from gangway_contracts.why import Verdict
from gangway_runtime.consumer import Transient

if TYPE_CHECKING:
    from gangway_backendkit.context import BackendContext

__all__ = [
    "Backend",
    "Capabilities",
    "Manifest",
    "NotYet",
    "SyncFailed",
    "Synced",
    "Verdict",
    "ViewsMore",
]


@dataclass(frozen=True)
class Capabilities:
    """What the scheduler can honour; admission and `gangway validate` report the rest."""

    gang: bool = True
    topology: bool = False
    queues: bool = False


@dataclass(frozen=True)
class Synced:
    """The backend's resources for a PodGang exist and match it."""

    resources: list[str] = field(default_factory=list)  # e.g. ["PodGroup ns/name"]
    message: str = "scheduler resources are in place"


class SyncFailed(Exception):
    """A problem the backend cannot fix by retrying (the PodGang asks for something the
    scheduler cannot do): recorded as BackendSynced=False with the reason, not retried.
    Anything else a handler raises is treated as transient and retried with backoff."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        self.message = message
        super().__init__(f"{reason}: {message}")


class NotYet(Transient):
    """What the PodGang needs is not there yet but will be (its PodCliqueSet, which the
    watcher mirrors shortly): the kit tries again ``after`` seconds, without limit and
    without counting it a failure."""

    def __init__(self, message: str, after: float = 1.0) -> None:
        super().__init__(message, after)


class Backend(Protocol):
    name: str
    capabilities: Capabilities

    async def init(self, ctx: BackendContext) -> None:
        """Check the cluster serves what the backend needs; raise to refuse to start."""

    def resources(self, podgang: PodGang, podcliqueset: PodCliqueSet | None) -> list[Manifest]:
        """The scheduler objects the backend keeps for ``podgang``, as manifests. Pure: the
        same function serves ``sync_podgang`` and ``gangway render``. Raise
        :class:`SyncFailed` when the PodGang cannot be translated."""

    async def sync_podgang(self, podgang: PodGang, ctx: BackendContext) -> Synced:
        """Create or update the scheduler's resources for ``podgang``; idempotent."""

    async def on_podgang_delete(self, last: ObjectRecord, ctx: BackendContext) -> None:
        """Clean up after a deleted PodGang (owner references usually already do)."""

    def prepare_pods(self, request: PreparePodsRequest) -> PreparePodsReply:
        """Set the scheduler's fields on pods about to be created for one PodGang; pure."""

    def scheduler_view(
        self, podgang: PodGang, objects: Mapping[str, Sequence[Mapping[str, Any]]]
    ) -> Verdict | None:
        """What the scheduler's own objects for ``podgang`` (as the watcher mirrored them,
        status and all, by their mirrored kind, e.g. ``podgroups.scheduling.run.ai``) say
        holds the gang back, in Gangway's vocabulary (``gangway_contracts.why``:
        ``OverQuota``, ``Unschedulable``…, with the scheduler's words); None when they say
        nothing holds it back. Pure, no reads: the kit writes it on the PodGang
        (``SchedulerBlocked``) only when it changes."""

    async def validate_podcliqueset(
        self, request: ValidateRequest, ctx: BackendContext | None
    ) -> ValidateReply:
        """Admit or reject a PodCliqueSet for this scheduler. ``ctx`` is None offline
        (``gangway render``): checks that need the cluster are skipped and said in warnings."""


@runtime_checkable
class ViewsMore(Protocol):
    """A backend whose ``scheduler_view`` also reads objects that are no gang's own (a
    queue the gang's object names): the kit reads them from the mirror and hands them over
    beside the gang's, under their kind. Optional: a backend without it sees only its
    gang's objects."""

    def view_also(
        self, podgang: PodGang, objects: Mapping[str, Sequence[Mapping[str, Any]]]
    ) -> Sequence[ObjectKey]:
        """The mirrored objects the view of ``podgang`` needs besides ``objects``."""
