"""Log lines: text or JSON, naming the key being handled and the trace it belongs to."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable

import pytest
from opentelemetry import trace

from gangway_contracts.subjects import ObjectKey
from gangway_runtime import logs, tracing
from gangway_runtime.settings import LogFormat, ServiceSettings, from_environment

TRACE = format(
    trace.get_current_span(tracing.workload_context("uid-1")).get_span_context().trace_id, "032x"
)


def _written(fmt: LogFormat, emit: Callable[[logging.Logger], None]) -> list[str]:
    out = io.StringIO()
    logger = logging.getLogger(f"gangway.test.logs.{fmt}")
    logger.handlers = [logs.handler(fmt, out)]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    emit(logger)
    return out.getvalue().splitlines()


def _in_a_workload(logger: logging.Logger) -> None:
    with (
        logs.handling(("ml", "trainer")),
        trace.get_tracer("test").start_as_current_span(
            "reconcile", context=tracing.workload_context("uid-1")
        ),
    ):
        logger.info("converged after %d write rounds", 2)


def test_json_names_the_key_and_the_trace() -> None:
    (line,) = _written("json", _in_a_workload)
    found = json.loads(line)
    assert next(iter(found)) == "time"
    assert found["time"].endswith("Z")
    assert {k: v for k, v in found.items() if k != "time"} == {
        "level": "INFO",
        "logger": "gangway.test.logs.json",
        "message": "converged after 2 write rounds",
        "key": "ml/trainer",
        "trace_id": TRACE,
    }


def test_json_outside_a_workload_has_neither() -> None:
    (line,) = _written("json", lambda logger: logger.warning("plain"))
    assert set(json.loads(line)) == {"time", "level", "logger", "message"}


def test_text_ends_with_key_and_trace_and_keeps_a_traceback_below() -> None:
    def failing(logger: logging.Logger) -> None:
        with logs.handling(ObjectKey("podgang", "kai-scheduler", "ml", "trainer-0")):
            try:
                raise ValueError("boom")
            except ValueError:
                logger.exception("sync failed")

    first, *rest = _written("text", failing)
    assert first.endswith("ERROR gangway.test.logs.text sync failed key=podgang ml/trainer-0")
    assert rest[0] == "Traceback (most recent call last):"
    assert rest[-1] == "ValueError: boom"


def test_text_line_of_a_workload() -> None:
    (line,) = _written("text", _in_a_workload)
    assert line.endswith(f"converged after 2 write rounds key=ml/trainer trace={TRACE}")


@pytest.mark.parametrize(
    ("key", "said"),
    [
        (("ml", "trainer"), "ml/trainer"),
        (ObjectKey("podgang", "kai-scheduler", "ml", "trainer-0"), "podgang ml/trainer-0"),
        (
            ObjectKey("queues.scheduling.run.ai", "kai-scheduler", "", "default"),
            "queues.scheduling.run.ai default",
        ),
        ("anything", "anything"),
    ],
)
def test_describe(key: object, said: str) -> None:
    assert logs.describe(key) == said


@pytest.mark.parametrize("written", ["json", "JSON", "Json"])
def test_log_format_in_any_case(written: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GANGWAY_LOG_FORMAT", written)
    assert from_environment(ServiceSettings).log_format == "json"
