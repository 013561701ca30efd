"""prepare-pods and validate, served as one NATS micro service per backend.

Every replica joins the same queue group, so a request reaches exactly one of them, and
``$SRV.INFO``/``$SRV.STATS`` show who serves what (``nats micro ls``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

from nats.aio.client import Client as NatsClient
from nats.micro import add_service
from nats.micro.request import Request
from opentelemetry import trace

from gangway_backendkit import metrics
from gangway_backendkit.context import BackendContext
from gangway_backendkit.protocol import Backend
from gangway_contracts.rpc import PreparePodsRequest, ValidateRequest
from gangway_contracts.subjects import BackendOperation
from gangway_runtime.micro import endpoint

tracer = trace.get_tracer("gangway.backendkit")
R = TypeVar("R")


def _endpoint(
    backend: str,
    operation: BackendOperation,
    request_type: type[R],
    answer: Callable[[R], Any | Awaitable[Any]],
) -> Callable[[Request], Awaitable[None]]:
    count = partial(metrics.REQUESTS.labels, backend, operation.value)
    return endpoint(
        f"{backend} {operation.value}",
        request_type,
        answer,
        tracer=tracer,
        counted=lambda outcome: count(outcome).inc(),
    )


@contextlib.asynccontextmanager
async def serve_requests(
    nc: NatsClient, ctx: BackendContext, backend: Backend
) -> AsyncIterator[None]:
    subjects = ctx.subjects
    service = await add_service(
        nc,
        name=subjects.backend_service_name(backend.name),
        version="1.0.0",
        description=f"Gangway scheduler backend {backend.name}",
        metadata={"backend": backend.name, **_capabilities(backend)},
    )
    operations: dict[BackendOperation, Callable[[Request], Any]] = {
        BackendOperation.PREPARE_PODS: _endpoint(
            backend.name,
            BackendOperation.PREPARE_PODS,
            PreparePodsRequest,
            backend.prepare_pods,
        ),
        BackendOperation.VALIDATE: _endpoint(
            backend.name,
            BackendOperation.VALIDATE,
            ValidateRequest,
            partial(backend.validate_podcliqueset, ctx=ctx),
        ),
    }
    try:
        for operation, handler in operations.items():
            await service.add_endpoint(
                name=operation.value,
                subject=subjects.backend(backend.name, operation),
                handler=handler,
            )
        yield
    finally:
        await service.stop()


def _capabilities(backend: Backend) -> dict[str, str]:
    caps = backend.capabilities
    return {
        "gang": str(caps.gang).lower(),
        "topology": str(caps.topology).lower(),
        "queues": str(caps.queues).lower(),
    }
