"""Log lines a platform engineer can follow: text for a terminal, JSON for a log pipeline,
and on every line written while a workload is handled its key and its trace id (the one
`gangway trace` and the OpenTelemetry backend know it by).

The key comes from a context variable the consumer kit (or a webhook call) sets for the
duration of one handling; the trace id from the current span. Neither has to be passed to
a log call. python-json-logger writes the JSON; the record's fields are ours.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, TextIO

from pythonjsonlogger.msgspec import MsgspecFormatter

from gangway_runtime import tracing
from gangway_runtime.settings import LogFormat, ServiceSettings

# What is being handled right now in this task: "<namespace>/<name>", a resource's kind first.
_KEY: ContextVar[str] = ContextVar("gangway_key", default="")

_TEXT = "%(asctime)s %(levelname)s %(name)s %(message)s"
_JSON_FIELDS = ["levelname", "name", "message"]
_JSON_NAMES = {"levelname": "level", "name": "logger"}


def describe(key: object) -> str:
    """A key as a person reads it: ``ml/trainer``, ``podgang ml/trainer-0``."""
    namespace, name = getattr(key, "namespace", None), getattr(key, "name", None)
    if isinstance(namespace, str) and isinstance(name, str):
        kind = getattr(key, "kind", "")
        where = f"{namespace}/{name}" if namespace else name
        return f"{kind} {where}" if kind else where
    if isinstance(key, tuple):
        return "/".join(str(part) for part in key)
    return str(key)


@contextlib.contextmanager
def handling(key: object) -> Iterator[None]:
    """Every line logged inside (in this task and the tasks it starts) names ``key``."""
    token = _KEY.set(describe(key))
    try:
        yield
    finally:
        _KEY.reset(token)


class _Context(logging.Filter):
    """Adds ``key`` and ``trace_id`` to every record: empty when there are none."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.key = _KEY.get()
        record.trace_id = tracing.trace_id_hex()
        return True


class _TextFormatter(logging.Formatter):
    """The plain line, then ``key=… trace=…`` when the record has them."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extra = [
            f"{field}={value}"
            for field, value in (
                ("key", getattr(record, "key", "")),
                ("trace", getattr(record, "trace_id", "")),
            )
            if value
        ]
        if not extra:
            return line
        first, newline, rest = line.partition("\n")  # a traceback stays below the line
        return f"{first} {' '.join(extra)}{newline}{rest}"


class _JsonFormatter(MsgspecFormatter):
    """One object per line; ``key`` and ``trace_id`` left out when empty."""

    def process_log_record(self, log_data: dict[str, Any]) -> dict[str, Any]:
        # The time first, as a reader scans for it.
        ordered = {"time": log_data.pop("time", None), **log_data}
        return {k: v for k, v in ordered.items() if v != "" or k == "message"}


def handler(fmt: LogFormat, stream: TextIO | None = None) -> logging.Handler:
    """Lines in ``fmt`` on ``stream`` (standard error), with the key and the trace id."""
    written = logging.StreamHandler(stream)
    if fmt == "json":
        written.setFormatter(
            _JsonFormatter(_JSON_FIELDS, rename_fields=_JSON_NAMES, timestamp="time")
        )
    else:
        written.setFormatter(_TextFormatter(_TEXT))
    written.addFilter(_Context())
    return written


def configure_logging(settings: ServiceSettings) -> None:
    """The root logger's one handler, as the settings say."""
    logging.basicConfig(level=settings.log_level, handlers=[handler(settings.log_format)])
    logging.captureWarnings(True)  # a library's warning is a line in the same format too
