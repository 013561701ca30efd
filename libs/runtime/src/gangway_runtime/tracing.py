"""OpenTelemetry: one trace per workload, carried in NATS headers and object annotations.

A PodCliqueSet is written by a user, so nothing of ours is on it to carry a trace; its trace id
is derived from its uid instead. Every service that touches the workload (or an object made
for it, which carries the trace in an annotation) lands in the same trace without anyone
having to write the PodCliqueSet.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, MutableMapping

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from gangway_contracts.subjects import TRACEPARENT_HEADER

_PROPAGATOR = TraceContextTextMapPropagator()
# The signal's own variable first, as OpenTelemetry's specification orders them.
_PROTOCOL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")


class TracingSettingError(ValueError):
    """An OTEL_* variable this process cannot follow; the message names it."""


def tracer_provider(service_name: str) -> TracerProvider:
    """The SDK as OpenTelemetry's variables say: the sampler (``OTEL_TRACES_SAMPLER``, read
    by the SDK), the service name (``OTEL_SERVICE_NAME`` or ``OTEL_RESOURCE_ATTRIBUTES``,
    else ``service_name``), and spans exported over OTLP when an endpoint is set, by
    ``OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`` (``http/protobuf``, the default, or ``grpc``)."""
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: service_name}))
    provider = TracerProvider(resource=resource)
    env = os.environ
    if exporting(env):
        provider.add_span_processor(BatchSpanProcessor(_exporter(env)))
    return provider


def _exporter(env: Mapping[str, str]) -> SpanExporter:
    variable = next((v for v in _PROTOCOL_VARIABLES if env.get(v)), _PROTOCOL_VARIABLES[-1])
    protocol = env.get(variable, "http/protobuf")
    # Imported for the protocol chosen only: each pulls in its transport.
    if protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
            OTLPSpanExporter as HttpExporter,
        )

        return HttpExporter()
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # noqa: PLC0415
            OTLPSpanExporter as GrpcExporter,
        )

        return GrpcExporter()
    raise TracingSettingError(f"{variable}: {protocol!r} is not supported: grpc or http/protobuf")


def setup_tracing(service_name: str) -> TracerProvider | None:
    """Install the SDK for this process (see ``tracer_provider``), once: a service started
    again in the same process (after a stream reset) keeps the provider it has. Only where
    spans go somewhere (an OTLP endpoint is set): without one, OpenTelemetry's API alone
    runs, which makes no span and carries the context it is given — the workload's trace id
    still travels in headers, annotations and journal entries, and a service downstream
    that exports still records the workload. Making spans nobody exported was a tenth of
    the watcher's busy time (a span for each object it mirrors)."""
    installed = trace.get_tracer_provider()
    if isinstance(installed, TracerProvider):
        return installed
    if not exporting(os.environ):
        return None
    provider = tracer_provider(service_name)
    trace.set_tracer_provider(provider)
    return provider


def exporting(env: Mapping[str, str]) -> bool:
    """Whether OpenTelemetry's variables send spans anywhere."""
    return bool(
        env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    )


def workload_context(uid: str, sampler: Sampler | None = None) -> Context:
    """The remote parent every span of one PodCliqueSet hangs from, derived from its uid.

    Whether the workload is sampled is decided here, as for a root span, by the installed
    sampler on the trace id: a ratio sampler decides the same for one trace id in every
    service, so a workload is traced whole or not at all, and ``parentbased_*`` samplers
    follow that decision."""
    digest = hashlib.sha256(uid.encode()).digest()
    trace_id = int.from_bytes(digest[:16], "big") or 1
    parent = SpanContext(
        trace_id=trace_id,
        span_id=int.from_bytes(digest[16:24], "big") or 1,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED if _sampled(trace_id, sampler) else 0),
    )
    return trace.set_span_in_context(NonRecordingSpan(parent))


def _sampled(trace_id: int, sampler: Sampler | None) -> bool:
    if sampler is None:  # the installed provider's
        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            return True  # no SDK: nothing is recorded anyway; the trace id still travels
        sampler = provider.sampler
    # An empty context: no parent, so a parentbased_* sampler asks its root sampler.
    decision = sampler.should_sample(Context(), trace_id, "workload").decision
    return decision == Decision.RECORD_AND_SAMPLE


def context_from_traceparent(traceparent: str | None) -> Context | None:
    if not traceparent:
        return None
    context = _PROPAGATOR.extract({TRACEPARENT_HEADER: traceparent})
    span = trace.get_current_span(context)
    return context if span.get_span_context().is_valid else None


def context_from_headers(headers: Mapping[str, str] | None) -> Context | None:
    return context_from_traceparent((headers or {}).get(TRACEPARENT_HEADER))


def inject(carrier: MutableMapping[str, str], context: Context | None = None) -> None:
    """Write the current (or given) span's W3C trace context into headers or annotations."""
    _PROPAGATOR.inject(carrier, context=context)


def trace_id_hex(context: Context | None = None) -> str:
    span_context = trace.get_current_span(context).get_span_context()
    return format(span_context.trace_id, "032x") if span_context.is_valid else ""
