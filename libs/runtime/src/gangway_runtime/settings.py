"""Service settings, read from the environment (``GANGWAY_*``) by pydantic-settings.

Every service reads the same base; a service adds its own fields by subclassing. A field's
variable is its name in capitals (``GANGWAY_LOG_LEVEL``); nested settings use ``__``
(``GANGWAY_STREAMS__REPLICAS=3``); a choice of words may be written in any case.
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Final, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from gangway_contracts.config import SchedulerConfig, load_operator_config, parse_scheduler_config
from gangway_contracts.errors import FieldErrors, pydantic_errors
from gangway_contracts.limits import MAX_GANGS, MAX_PODS, Limits
from gangway_contracts.subjects import DEFAULT_PREFIX, Subjects

PREFIX: Final = "GANGWAY_"

Positive = Annotated[int, Field(ge=1)]
Seconds = Annotated[float, Field(gt=0)]
Port = Annotated[int, Field(ge=0, le=65535)]


def any_case(words: Any) -> BeforeValidator:
    """A Literal's word written in any case (``info``, ``Info``) read as the word itself."""
    choices = typing.get_args(words)

    def chosen(value: object) -> object:
        if isinstance(value, str):
            return next((w for w in choices if w.lower() == value.lower()), value)
        return value

    return BeforeValidator(chosen)


LogFormatWord = Literal["text", "json"]
LogFormat = Annotated[LogFormatWord, any_case(LogFormatWord)]
LogLevelWord = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
StorageWord = Literal["file", "memory"]


class StreamSettings(BaseModel):
    """How the JetStream streams are provisioned; the same for every service, so whichever
    starts first creates them and the others find them unchanged."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    replicas: Annotated[int, Field(ge=1, le=5)] = 1
    storage: Annotated[StorageWord, any_case(StorageWord)] = "file"
    # Two watchers publishing the same change within this window store it once.
    duplicate_window_seconds: Seconds = 120.0
    # A tombstone says what was deleted for this long, then the object's subject is empty.
    tombstone_ttl_seconds: Positive = 86_400
    journal_max_age_seconds: Seconds = 7 * 86_400
    journal_max_bytes: Positive = 1 << 30
    deadletter_max_age_seconds: Seconds = 14 * 86_400


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=PREFIX, env_nested_delimiter="__", frozen=True, extra="ignore"
    )

    # One server, or several separated by commas (a cluster's nodes): tried in turn.
    nats_url: str = "nats://127.0.0.1:4222"
    # A NATS .creds file (JWT + nkey seed): one user per service, with its subject permissions.
    nats_creds: Path | None = None
    nats_user: str | None = None
    nats_password: SecretStr | None = None
    nats_ca: Path | None = None
    subject_prefix: str = DEFAULT_PREFIX
    # Unset: in-cluster service account, else $KUBECONFIG / ~/.kube/config.
    kubeconfig: Path | None = None
    # Connections to the API server at once (HTTP/1.1: one request each; each TLS
    # connection holds a 16 KiB read buffer: apiclient.TLS_READ_BUFFER). Requests beyond wait.
    api_connections: Positive = 32
    http_host: str = "0.0.0.0"
    http_port: Port = 8080
    log_level: Annotated[LogLevelWord, any_case(LogLevelWord)] = "INFO"  # info, Info too
    # text for a terminal, json for a log pipeline; either names the key and trace handled.
    log_format: LogFormat = "text"
    streams: StreamSettings = StreamSettings()
    # The operator configuration (scheduler profiles). Unset: default-scheduler alone,
    # without gang scheduling.
    config_file: Path | None = None

    @field_validator("nats_url")
    @classmethod
    def _nats_url(cls, value: str) -> str:
        nats_servers(value)  # a ValueError naming the bad one
        return value

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


class LimitSettings(ServiceSettings):
    """A service that judges PodCliqueSets by size (admission, podgang): the same settings
    for both, so what one refuses the other never builds."""

    max_pods_per_podcliqueset: Positive = MAX_PODS
    max_gangs_per_podcliqueset: Positive = MAX_GANGS

    @property
    def limits(self) -> Limits:
        return Limits(self.max_pods_per_podcliqueset, self.max_gangs_per_podcliqueset)


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
    ack_wait_seconds: Annotated[float, Field(ge=1)] = 15.0
    # Attempts at a key failing for a reason retrying may not fix, before its messages go
    # to dead letter. Transient failures (API server, NATS, a backend not answering) retry
    # without limit.
    max_attempts: Positive = 8
    # Every key that may need work is taken up at start and then this often, events or not.
    resync_seconds: Seconds = 600.0
    # Who this replica is to its service's key leases: a name a restart of its process keeps
    # and no other live process has (deploy/ sets the pod's name), so a restarted replica
    # takes its own leases back at once. Empty: host and pid (a restart waits them out).
    lease_holder: str = ""
    # How long a key's lease stays with this replica after a handling, in case the key comes
    # back (a gang's next step): no bus write then. Another replica waits that much longer
    # for a key this one handled last. 0: let go at once.
    lease_linger_seconds: Annotated[float, Field(ge=0)] = 1.0


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


def from_environment(kind: type[Settings], *, given: Mapping[str, Any] | None = None) -> Settings:
    """Settings of ``kind`` from ``GANGWAY_*`` variables (others, and unknown ones, ignored),
    values ``given`` by field name taking their place; raises FieldErrors naming each field
    at fault."""
    try:
        return kind(**(given or {}))
    except ValidationError as exc:
        raise FieldErrors(pydantic_errors(exc)) from None


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
