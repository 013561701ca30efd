"""OpenTelemetry as its variables say: spans reach a collector over OTLP/HTTP and over gRPC,
the service name is the operator's when set, and a sampler samples workloads down, each
whole or not at all."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from functools import partial

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ParentBasedTraceIdRatio

from gangway_runtime import tracing
from tests.support.otlp import Receiver, otlp_grpc_receiver, otlp_receiver
from tests.support.store import eventually

Receivers = Callable[[], AbstractAsyncContextManager[Receiver]]


async def _exported(receiver: Receiver, service: str = "gangway-podgang") -> list[str]:
    provider = tracing.tracer_provider(service)
    context = tracing.workload_context("uid-1", provider.sampler)
    with provider.get_tracer("test").start_as_current_span("reconcile", context=context):
        pass
    # The exporter blocks its thread; the receiver answers on this loop.
    await asyncio.to_thread(provider.force_flush)
    await asyncio.to_thread(provider.shutdown)
    return await eventually(partial(_services, receiver), bool, within=10)


async def _services(receiver: Receiver) -> list[str]:
    return [span.service for span in receiver.spans if span.name == "reconcile"]


@pytest.mark.parametrize(
    ("protocol", "receiving"),
    [("http/protobuf", otlp_receiver), ("grpc", otlp_grpc_receiver)],
)
async def test_spans_reach_a_collector_by_the_protocol_set(
    protocol: str, receiving: Receivers, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with receiving() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", protocol)
        assert await _exported(collector) == ["gangway-podgang"]


async def test_the_operators_service_name_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    async with otlp_receiver() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "podgang-eu-west")
        assert await _exported(collector) == ["podgang-eu-west"]


def test_a_protocol_not_supported_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    with pytest.raises(tracing.TracingSettingError, match=r"^OTEL_EXPORTER_OTLP_PROTOCOL: "):
        tracing.tracer_provider("gangway-podgang")


def test_a_ratio_sampler_samples_workloads_down_the_same_in_every_service(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0.25")
    podgang, backend = tracing.tracer_provider("podgang"), tracing.tracer_provider("backend")
    assert isinstance(podgang.sampler, ParentBasedTraceIdRatio)

    def recorded(provider: TracerProvider, uid: str) -> bool:
        context = tracing.workload_context(uid, provider.sampler)
        with provider.get_tracer("test").start_as_current_span("step", context=context) as span:
            return span.is_recording()

    uids = [f"uid-{i}" for i in range(2000)]
    in_podgang = [recorded(podgang, uid) for uid in uids]
    assert 0.2 < sum(in_podgang) / len(uids) < 0.3
    assert in_podgang == [recorded(backend, uid) for uid in uids]
