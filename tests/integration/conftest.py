"""Session-wide real servers; per-test namespace and NATS names, so tests never meet."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator

import nats
import pytest
from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient
from nats.js.errors import NotFoundError
from opentelemetry import trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gangway_contracts.subjects import Subjects
from gangway_runtime.tracing import tracer_provider
from tests.support import environment
from tests.support.kai import QUEUE, ensure_queue
from tests.support.kube import admin_client

pytestmark = pytest.mark.integration


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration" in str(item.path):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def spans() -> InMemorySpanExporter:
    """Every span the services in this process finish, as the OTLP exporter would see them."""
    exporter = InMemorySpanExporter()
    provider = tracer_provider("gangway-tests")
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)  # the services' setup_tracing keeps it
    return exporter


@pytest.fixture(scope="session", autouse=True)
def _tracing(spans: InMemorySpanExporter) -> None:
    """Services run in the test's process get a real tracer, as in their own process."""


@pytest.fixture(scope="session")
def cluster() -> Iterator[environment.Cluster]:
    with environment.kubernetes() as c:
        yield c


@pytest.fixture(scope="session")
def nats_url() -> Iterator[str]:
    with environment.nats() as url:
        yield url


@pytest.fixture
async def api(cluster: environment.Cluster) -> AsyncIterator[ApiClient]:
    async with admin_client(cluster.kubeconfig) as api_client:
        yield api_client


@pytest.fixture
def subjects() -> Subjects:
    return Subjects(prefix=f"t{uuid.uuid4().hex[:12]}")


@pytest.fixture
async def nc(nats_url: str, subjects: Subjects) -> AsyncIterator[NatsClient]:
    connection = await nats.connect(nats_url)
    yield connection
    js = connection.jetstream()
    for stream in (subjects.objects_stream, subjects.journal_stream, subjects.deadletter_stream):
        with contextlib.suppress(NotFoundError):
            await js.delete_stream(stream)
    await connection.drain()


@pytest.fixture
async def queue(api: ApiClient) -> str:
    """KAI's queue the inference fixture PodCliqueSet names, made if missing."""
    return await ensure_queue(api, QUEUE)
