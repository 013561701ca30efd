"""prepare-pods and validate, served as one NATS micro service per backend.

Every replica joins the same queue group, so a request reaches exactly one of them, and
``$SRV.INFO``/``$SRV.STATS`` show who serves what (``nats micro ls``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import msgspec
from nats.aio.client import Client as NatsClient
from nats.micro import add_service
from nats.micro.request import Request

from gangway_backendkit.protocol import Backend
from gangway_contracts.codec import to_json
from gangway_contracts.rpc import PreparePodsRequest, ValidateRequest
from gangway_contracts.subjects import BackendOperation, Subjects

log = logging.getLogger(__name__)
R = TypeVar("R")


def _endpoint(request_type: type[R], answer: Callable[[R], Any]) -> Callable[[Request], Any]:
    async def handle(request: Request) -> None:
        try:
            decoded = msgspec.json.decode(request.data, type=request_type)
        except msgspec.DecodeError as exc:
            await request.respond_error("400", f"malformed request: {exc}")
            return
        await request.respond(to_json(answer(decoded)))

    return handle


@contextlib.asynccontextmanager
async def serve_requests(
    nc: NatsClient, subjects: Subjects, backend: Backend
) -> AsyncIterator[None]:
    service = await add_service(
        nc,
        name=subjects.backend_service_name(backend.name),
        version="1.0.0",
        description=f"Gangway scheduler backend {backend.name}",
        metadata={"backend": backend.name},
    )
    try:
        await service.add_endpoint(
            name=BackendOperation.PREPARE_PODS.value,
            subject=subjects.backend(backend.name, BackendOperation.PREPARE_PODS),
            handler=_endpoint(PreparePodsRequest, backend.prepare_pods),
        )
        await service.add_endpoint(
            name=BackendOperation.VALIDATE.value,
            subject=subjects.backend(backend.name, BackendOperation.VALIDATE),
            handler=_endpoint(ValidateRequest, backend.validate_podcliqueset),
        )
        yield
    finally:
        await service.stop()
