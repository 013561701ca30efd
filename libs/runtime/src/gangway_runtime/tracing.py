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
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from gangway_contracts.subjects import TRACEPARENT_HEADER

_PROPAGATOR = TraceContextTextMapPropagator()


def setup_tracing(service_name: str) -> TracerProvider:
    """Install the SDK; spans go to OTLP when ``OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT`` is set."""
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    env = os.environ
    if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
            OTLPSpanExporter,
        )

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


def workload_context(uid: str) -> Context:
    """The remote parent every span of one PodCliqueSet hangs from, derived from its uid."""
    digest = hashlib.sha256(uid.encode()).digest()
    parent = SpanContext(
        trace_id=int.from_bytes(digest[:16], "big") or 1,
        span_id=int.from_bytes(digest[16:24], "big") or 1,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return trace.set_span_in_context(NonRecordingSpan(parent))


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
