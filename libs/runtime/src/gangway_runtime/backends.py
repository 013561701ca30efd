"""Asking a scheduler backend over NATS: the one client of the request/reply every backend
serves (GREP-375's ``prepare-pods`` and ``validate``), used by podgang and admission.

A backend that does not answer (no replica, a timeout, an error reply, an answer that is no
reply of the contract) is :class:`BackendUnavailable`; one that answers but refuses or botches
the pods it was asked to prepare is :class:`PrepareFailed`. Both are transient: nothing was
written, and asking again later may succeed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec
from nats.aio.client import Client as NatsClient

from gangway_contracts import labels
from gangway_contracts.codec import to_json
from gangway_contracts.grove import PodGang
from gangway_contracts.rpc import (
    PodsPrepared,
    PreparePodsReply,
    PreparePodsRequest,
    ValidateReply,
    ValidateRequest,
)
from gangway_contracts.subjects import BackendOperation, Subjects
from gangway_runtime.consumer import Transient
from gangway_runtime.micro import request_reply

# A prepare-pods request is split to stay this far under the server's maximum payload (the
# reply is the same pods with a few labels more).
PAYLOAD_SHARE: Final = 0.8


class BackendUnavailable(Transient):
    """The backend did not answer: no replica, no answer in time, an error reply or one that
    is not the contract's."""

    def __init__(self, backend: str, why: str) -> None:
        self.backend = backend
        self.why = why
        super().__init__(f'scheduler backend "{backend}" {why}')


class PrepareFailed(Transient):
    """The backend answered, but refused or botched the pods: nothing is created."""

    def __init__(self, backend: str, reason: str, message: str) -> None:
        self.backend = backend
        self.reason = reason
        super().__init__(f"backend {backend} could not prepare the pods: {reason}: {message}")


class BackendClient:
    """Requests to the backends over one NATS connection, each waiting ``timeout`` s."""

    def __init__(self, nc: NatsClient, subjects: Subjects, timeout: float) -> None:
        self.nc = nc
        self.subjects = subjects
        self.timeout = timeout

    async def validate(self, backend: str, request: ValidateRequest) -> ValidateReply:
        """The backend's verdict on a PodCliqueSet (and what of it it cannot honour)."""
        payload = to_json(request)
        if len(payload) > self.nc.max_payload and request.old is not None:
            # The old version is context, not required: drop it before giving up.
            payload = to_json(msgspec.structs.replace(request, old=None))
        if len(payload) > self.nc.max_payload:
            why = f"cannot be asked: the request is {len(payload)} bytes, over the bus's limit"
            raise BackendUnavailable(backend, f"{why} of {self.nc.max_payload}")

        def unavailable(reason: str, message: str) -> Exception:
            return BackendUnavailable(backend, message)

        verdict: ValidateReply = await self._ask(
            backend, BackendOperation.VALIDATE, payload, ValidateReply, unavailable
        )
        return verdict

    async def prepare_pods(
        self, backend: str, podgang: PodGang, pods: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """The pods as the backend prepares them: one request per PodGang, split only when it
        would exceed the server's maximum payload; every answer checked, never trusted."""

        def botched(reason: str, message: str) -> Exception:
            return PrepareFailed(backend, reason, message)

        prepared: list[dict[str, Any]] = []
        for chunk in chunks(podgang, pods, int(self.nc.max_payload * PAYLOAD_SHARE)):
            payload = to_json(PreparePodsRequest(podgang=podgang, pods=chunk))
            answer: PreparePodsReply = await self._ask(
                backend, BackendOperation.PREPARE_PODS, payload, PreparePodsReply, botched
            )
            if not isinstance(answer, PodsPrepared):
                details = "; ".join(map(str, answer.errors))
                message = f"{answer.message} ({details})" if details else answer.message
                raise PrepareFailed(backend, answer.reason, message)
            prepared += checked(backend, chunk, answer.pods)
        return prepared

    async def _ask(
        self,
        backend: str,
        operation: BackendOperation,
        payload: bytes,
        reply: Any,  # a reply type, or a tagged union of them
        botched: Callable[[str, str], Exception],
    ) -> Any:
        """The backend's reply; ``botched(reason, message)`` is raised when it answered with
        an error or with something that is not ``reply``."""

        def unavailable(why: str) -> Exception:
            return BackendUnavailable(backend, why)

        subject = self.subjects.backend(backend, operation)
        return await request_reply(
            self.nc,
            subject,
            payload,
            reply=reply,
            wait_seconds=self.timeout,
            unavailable=unavailable,
            botched=botched,
        )


def chunks(podgang: PodGang, pods: list[dict[str, Any]], limit: int) -> list[list[dict[str, Any]]]:
    """Pods split so that each request stays under ``limit`` bytes (one chunk if it fits)."""
    size = len(to_json(PreparePodsRequest(podgang=podgang, pods=pods)))
    parts = max(1, -(-size // max(limit, 1)))
    step = max(1, -(-len(pods) // parts))
    return [pods[i : i + step] for i in range(0, len(pods), step)]


def checked(
    backend: str, asked: list[dict[str, Any]], answered: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The backend's pods, refused unless they are the pods asked about, in order; our gate
    is put back if the backend dropped it (a pod is never created ungated)."""
    if [p.get("metadata", {}).get("name") for p in answered] != [
        p["metadata"]["name"] for p in asked
    ]:
        raise PrepareFailed(backend, "InvalidReply", "prepared pods differ from those asked")
    gate = {"name": labels.PODGANG_PENDING_CREATION_GATE}
    for pod in answered:
        spec = pod.setdefault("spec", {})
        gates = spec.setdefault("schedulingGates", [])
        if gate not in gates:
            gates.append(gate)
        pod["metadata"]["namespace"] = asked[0]["metadata"]["namespace"]
    return answered
