"""Minimal OTLP trace receivers, over HTTP and over gRPC: what a collector would get from the
services' exporters, decoded with OpenTelemetry's own protobuf and gRPC definitions."""

from __future__ import annotations

import contextlib
import gzip
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import grpc
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import (
    TraceServiceServicer,
    add_TraceServiceServicer_to_server,
)

from gangway_admission.service import bound_port


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    trace_id: str  # 32 hex digits
    span_id: str
    parent_span_id: str


@dataclass
class Receiver:
    endpoint: str = ""  # what OTEL_EXPORTER_OTLP_ENDPOINT is set to
    spans: list[ReceivedSpan] = field(default_factory=list)

    def in_trace(self, trace_id: str) -> list[ReceivedSpan]:
        return [s for s in self.spans if s.trace_id == trace_id]

    async def _traces(self, request: web.Request) -> web.Response:
        body = await request.read()
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        message = ExportTraceServiceRequest()
        message.ParseFromString(body)
        self.record(message)
        answer = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=answer, content_type="application/x-protobuf")

    def record(self, message: ExportTraceServiceRequest) -> None:
        for resource_spans in message.resource_spans:
            service = next(
                (
                    a.value.string_value
                    for a in resource_spans.resource.attributes
                    if a.key == "service.name"
                ),
                "",
            )
            for scope in resource_spans.scope_spans:
                self.spans += [
                    ReceivedSpan(
                        service,
                        span.name,
                        span.trace_id.hex(),
                        span.span_id.hex(),
                        span.parent_span_id.hex(),
                    )
                    for span in scope.spans
                ]


@contextlib.asynccontextmanager
async def otlp_receiver() -> AsyncIterator[Receiver]:
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/v1/traces", receiver._traces)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    receiver.endpoint = f"http://127.0.0.1:{bound_port(site, 0)}"
    try:
        yield receiver
    finally:
        await runner.cleanup()


class _TraceService(TraceServiceServicer):
    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver

    async def Export(
        self, request: ExportTraceServiceRequest, context: object
    ) -> ExportTraceServiceResponse:
        self.receiver.record(request)
        return ExportTraceServiceResponse()


@contextlib.asynccontextmanager
async def otlp_grpc_receiver() -> AsyncIterator[Receiver]:
    receiver = Receiver()
    server = grpc.aio.server()
    add_TraceServiceServicer_to_server(_TraceService(receiver), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    receiver.endpoint = f"http://127.0.0.1:{port}"
    try:
        yield receiver
    finally:
        await server.stop(grace=None)
