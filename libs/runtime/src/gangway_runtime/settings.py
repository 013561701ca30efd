"""Service settings, read from the environment (``GANGWAY_*``).

Every service reads the same base; a service adds its own fields by subclassing. A field's
variable is its name in capitals (``GANGWAY_LOG_LEVEL``); nested settings use ``__``
(``GANGWAY_STREAMS__REPLICAS=3``); a choice of words may be written in any case.

Plain dataclasses, converted by msgspec with every problem named (``typed.convert``):
pydantic-settings did the same for about 10 MiB of imports in every service.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Final, Literal, TypeVar

from msgspec import Meta

from gangway_contracts.config import SchedulerConfig, load_operator_config, parse_scheduler_config
from gangway_contracts.errors import FieldErrors
from gangway_contracts.limits import MAX_GANGS, MAX_PODS, Limits
from gangway_contracts.subjects import DEFAULT_PREFIX, Subjects
from gangway_contracts.typed import Check, convert, fields

PREFIX: Final = "GANGWAY_"

LogFormat = Literal["text", "json"]
Positive = Annotated[int, Meta(ge=1)]
Seconds = Annotated[float, Meta(gt=0)]
Port = Annotated[int, Meta(ge=0, le=65535)]


class Secret:
    """A value never shown: its repr (and so any log of the settings) is masked."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclasses.dataclass(frozen=True, kw_only=True)
class StreamSettings:
    """How the JetStream streams are provisioned; the same for every service, so whichever
    starts first creates them and the others find them unchanged."""

    replicas: Annotated[int, Meta(ge=1, le=5)] = 1
    storage: Literal["file", "memory"] = "file"
    # Two watchers publishing the same change within this window store it once.
    duplicate_window_seconds: Seconds = 120.0
    # A tombstone says what was deleted for this long, then the object's subject is empty.
    tombstone_ttl_seconds: Positive = 86_400
    journal_max_age_seconds: Seconds = 7 * 86_400
    journal_max_bytes: Positive = 1 << 30
    deadletter_max_age_seconds: Seconds = 14 * 86_400


def _nats_url(value: str) -> str | None:
    try:
        nats_servers(value)
    except ValueError as exc:
        return str(exc)  # names the bad one
    return None


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServiceSettings:
    CHECKS: ClassVar[dict[str, Check]] = {"nats_url": _nats_url}

    # One server, or several separated by commas (a cluster's nodes): tried in turn.
    nats_url: str = "nats://127.0.0.1:4222"
    # A NATS .creds file (JWT + nkey seed): one user per service, with its subject permissions.
    nats_creds: Path | None = None
    nats_user: str | None = None
    nats_password: Secret | None = None
    nats_ca: Path | None = None
    subject_prefix: str = DEFAULT_PREFIX
    # Unset: in-cluster service account, else $KUBECONFIG / ~/.kube/config.
    kubeconfig: Path | None = None
    # Connections to the API server at once (HTTP/1.1: one request each; each TLS
    # connection holds a 64 KiB read buffer: kube.TLS_READ_BUFFER). Requests beyond wait.
    api_connections: Positive = 32
    http_host: str = "0.0.0.0"
    http_port: Port = 8080
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"  # any case: info, Info
    # text for a terminal, json for a log pipeline; either names the key and trace handled.
    log_format: LogFormat = "text"
    streams: StreamSettings = StreamSettings()
    # The operator configuration (scheduler profiles). Unset: default-scheduler alone,
    # without gang scheduling.
    config_file: Path | None = None

    @property
    def nats_servers(self) -> list[str]:
        return nats_servers(self.nats_url)

    @property
    def subjects(self) -> Subjects:
        return Subjects(self.subject_prefix)

    def scheduler_config(self) -> SchedulerConfig:
        if self.config_file is None:
            return parse_scheduler_config(None)
        return load_operator_config(self.config_file.read_text())


@dataclasses.dataclass(frozen=True, kw_only=True)
class LimitSettings(ServiceSettings):
    """A service that judges PodCliqueSets by size (admission, podgang): the same settings
    for both, so what one refuses the other never builds."""

    max_pods_per_podcliqueset: Positive = MAX_PODS
    max_gangs_per_podcliqueset: Positive = MAX_GANGS

    @property
    def limits(self) -> Limits:
        return Limits(self.max_pods_per_podcliqueset, self.max_gangs_per_podcliqueset)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ConsumerSettings(ServiceSettings):
    """A service that takes work from the OBJECTS stream (podgang, every backend): how the
    consumer kit fetches, holds, retries and resyncs."""

    # Keys handled at once by one replica.
    workers: Positive = 8
    # Messages out to all replicas and not yet acknowledged (older ones of a key are acked
    # as newer ones arrive, so this is about keys in flight).
    max_ack_pending: Positive = 1000
    # A message not acknowledged nor kept alive this long goes to another replica; held
    # messages are kept alive every third of it, so a dead replica's work moves on quickly.
    ack_wait_seconds: Annotated[float, Meta(ge=1)] = 15.0
    # Attempts at a key failing for a reason retrying may not fix, before its messages go
    # to dead letter. Transient failures (API server, NATS, a backend not answering) retry
    # without limit.
    max_attempts: Positive = 8
    # Every key that may need work is taken up at start and then this often, events or not.
    resync_seconds: Seconds = 600.0


Settings = TypeVar("Settings", bound=ServiceSettings)

NATS_SCHEMES: Final = ("nats", "tls", "ws", "wss")


def nats_servers(urls: str) -> list[str]:
    """The servers a comma-separated NATS URL lists (spaces around commas ignored)."""
    found = [url.strip() for url in urls.split(",") if url.strip()]
    if not found:
        raise ValueError("no NATS server URL given")
    for url in found:
        scheme, sep, rest = url.partition("://")
        if not sep or scheme not in NATS_SCHEMES or not rest:
            raise ValueError(
                f'"{url}" is not a NATS URL: {"|".join(NATS_SCHEMES)}://host:port, several '
                "separated by commas"
            )
    return found


def from_environment(
    kind: type[Settings],
    environ: Mapping[str, str] | None = None,
    *,
    given: Mapping[str, Any] | None = None,
) -> Settings:
    """Settings of ``kind`` from ``GANGWAY_*`` variables (others, and unknown ones, ignored),
    values ``given`` by field name taking their place; raises FieldErrors naming each field
    at fault."""
    written = _written(kind, os.environ if environ is None else environ, PREFIX)
    # Strings (all the environment has) are read as each field's type.
    return convert({**written, **(given or {})}, kind, strict=False, dec_hook=_from_text)


def load_settings(kind: type[Settings]) -> Settings:
    """A service's settings from the environment. A bad value ends the process with one line
    per problem, naming the variable and why, and exit code 2: never a traceback."""
    try:
        return from_environment(kind)
    except FieldErrors as exc:
        for error in exc.errors:
            variable = PREFIX + error.field.replace(".", "__").upper()
            print(f"{variable}: {error.reason}", file=sys.stderr)
        raise SystemExit(2) from None


def _written(kind: type, environ: Mapping[str, str], prefix: str) -> dict[str, Any]:
    """The variables naming ``kind``'s fields, by field name: nested settings as mappings,
    a choice of words matched in any case."""
    found: dict[str, Any] = {}
    for field in fields(kind):
        variable = prefix + field.name.upper()
        if isinstance(field.type, type) and dataclasses.is_dataclass(field.type):
            nested = _written(field.type, environ, variable + "__")
            if nested:
                found[field.name] = nested
        elif variable in environ:
            found[field.name] = _choice(field.type, environ[variable])
    return found


def _choice(kind: Any, text: str) -> str:
    """``text`` as the one of a Literal's words it matches in any case; else as written."""
    if typing.get_origin(kind) is Literal:
        return next((w for w in typing.get_args(kind) if w.lower() == text.lower()), text)
    return text


def _from_text(kind: type, value: Any) -> Any:
    """The types msgspec does not convert itself: from a string, or given as they are."""
    if kind in (Path, Secret):
        if isinstance(value, kind):
            return value
        if isinstance(value, str):
            return kind(value)
    raise TypeError(f"expected a string, got {type(value).__name__}")  # a ValidationError
