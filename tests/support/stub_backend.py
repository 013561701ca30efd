"""A third-party backend in a few dozen lines: what plugging a scheduler into Gangway takes.

Enabled purely by configuration (``external: true`` in the scheduler profiles); nothing in
Gangway imports it. Tests steer it through PodGang names.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from gangway_backendkit.context import BackendContext
from gangway_backendkit.protocol import Capabilities, Synced, SyncFailed, Verdict
from gangway_contracts.errors import FieldError
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.records import ObjectRecord
from gangway_contracts.rpc import (
    PodsPrepared,
    PreparePodsReply,
    PreparePodsRequest,
    ValidateReply,
    ValidateRequest,
)

NAME = "stub-scheduler"


class StubBackend:
    name = NAME
    capabilities = Capabilities(gang=True)

    def __init__(self) -> None:
        self.syncs: Counter[str] = Counter()
        self.deleted: list[str] = []

    async def init(self, ctx: BackendContext) -> None:
        return None

    def resources(
        self, podgang: PodGang, podcliqueset: PodCliqueSet | None
    ) -> list[dict[str, Any]]:
        return []  # its scheduler keeps its groups in memory

    async def sync_podgang(self, podgang: PodGang, ctx: BackendContext) -> Synced:
        name = podgang.metadata.name
        self.syncs[name] += 1
        if name.startswith("flaky") and self.syncs[name] <= 2:
            raise RuntimeError("scheduler API briefly unavailable")
        if name.startswith("broken"):
            raise RuntimeError("always fails")
        if name.startswith("unsupported"):
            raise SyncFailed("Unsupported", "this scheduler cannot place this gang")
        return Synced(resources=[f"StubGroup {podgang.metadata.namespace}/{name}"])

    async def on_podgang_delete(self, last: ObjectRecord, ctx: BackendContext) -> None:
        self.deleted.append(last.name)

    def prepare_pods(self, request: PreparePodsRequest) -> PreparePodsReply:
        pods = [
            {**pod, "spec": {**pod.get("spec", {}), "schedulerName": NAME}} for pod in request.pods
        ]
        return PodsPrepared(pods=pods)

    def scheduler_view(
        self, podgang: PodGang, objects: Mapping[str, Sequence[Mapping[str, Any]]]
    ) -> Verdict | None:
        return None  # it keeps no scheduler objects to read

    async def validate_podcliqueset(
        self, request: ValidateRequest, ctx: BackendContext | None
    ) -> ValidateReply:
        if "stub/reject" in request.podcliqueset.metadata.labels:
            error = FieldError(field="metadata.labels[stub/reject]", reason="rejected by stub")
            return ValidateReply(allowed=False, errors=[error])
        return ValidateReply(allowed=True)


# A configuration where the stub backend owns every PodCliqueSet (the default profile).
STUB_CONFIG = {"profiles": [{"name": NAME, "external": True, "default": True}]}
