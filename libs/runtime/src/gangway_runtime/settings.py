"""Service settings, read from the environment (``GANGWAY_*``) by pydantic-settings.

Every service reads the same base; a service adds its own fields by subclassing. Nested
settings use ``__``: ``GANGWAY_STREAMS__REPLICAS=3``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from gangway_contracts.config import SchedulerConfig, load_operator_config, parse_scheduler_config
from gangway_contracts.limits import MAX_GANGS, MAX_PODS, Limits
from gangway_contracts.subjects import DEFAULT_PREFIX, Subjects

LogFormat = Literal["text", "json"]


class StreamSettings(BaseModel):
    """How the JetStream streams are provisioned; the same for every service, so whichever
    starts first creates them and the others find them unchanged."""

    replicas: int = Field(default=1, ge=1, le=5)
    storage: Literal["file", "memory"] = "file"
    # Two watchers publishing the same change within this window store it once.
    duplicate_window_seconds: float = Field(default=120.0, gt=0)
    # A tombstone says what was deleted for this long, then the object's subject is empty.
    tombstone_ttl_seconds: int = Field(default=86_400, ge=1)
    journal_max_age_seconds: float = Field(default=7 * 86_400, gt=0)
    journal_max_bytes: int = Field(default=1 << 30, gt=0)
    deadletter_max_age_seconds: float = Field(default=14 * 86_400, gt=0)


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="GANGWAY_", env_nested_delimiter="__", extra="ignore"
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
    # connection holds about 200 KiB of buffers). Requests beyond wait for one.
    api_connections: int = Field(default=32, ge=1)
    http_host: str = "0.0.0.0"
    http_port: int = Field(default=8080, ge=0, le=65535)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"  # any case: info, Info
    # text for a terminal, json for a log pipeline; either names the key and trace handled.
    log_format: LogFormat = "text"
    streams: StreamSettings = StreamSettings()
    # The operator configuration (scheduler profiles). Unset: default-scheduler alone,
    # without gang scheduling.
    config_file: Path | None = None

    @field_validator("nats_url")
    @classmethod
    def _nats_urls(cls, value: str) -> str:
        nats_servers(value)  # raises ValueError naming the bad one
        return value

    @property
    def nats_servers(self) -> list[str]:
        return nats_servers(self.nats_url)

    @field_validator("log_level", mode="before")
    @classmethod
    def _any_case(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator("log_format", mode="before")
    @classmethod
    def _lower_case(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

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

    max_pods_per_podcliqueset: int = Field(default=MAX_PODS, ge=1)
    max_gangs_per_podcliqueset: int = Field(default=MAX_GANGS, ge=1)

    @property
    def limits(self) -> Limits:
        return Limits(self.max_pods_per_podcliqueset, self.max_gangs_per_podcliqueset)


class ConsumerSettings(ServiceSettings):
    """A service that takes work from the OBJECTS stream (podgang, every backend): how the
    consumer kit fetches, holds, retries and resyncs."""

    # Keys handled at once by one replica.
    workers: int = Field(default=8, ge=1)
    # Messages out to all replicas and not yet acknowledged (older ones of a key are acked
    # as newer ones arrive, so this is about keys in flight).
    max_ack_pending: int = Field(default=1000, ge=1)
    # A message not acknowledged nor kept alive this long goes to another replica; held
    # messages are kept alive every third of it, so a dead replica's work moves on quickly.
    ack_wait_seconds: float = Field(default=15.0, ge=1)
    # Attempts at a key failing for a reason retrying may not fix, before its messages go
    # to dead letter. Transient failures (API server, NATS, a backend not answering) retry
    # without limit.
    max_attempts: int = Field(default=8, ge=1)
    # Every key that may need work is taken up at start and then this often, events or not.
    resync_seconds: float = Field(default=600.0, gt=0)


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


def load_settings(kind: type[Settings]) -> Settings:
    """A service's settings from the environment. A bad value ends the process with one line
    per problem, naming the variable and why, and exit code 2: never a traceback."""
    try:
        return kind()
    except ValidationError as exc:
        for error in exc.errors():
            variable = "GANGWAY_" + "__".join(str(part) for part in error["loc"]).upper()
            reason = error["msg"].removeprefix("Value error, ")  # a validator's own words
            print(f"{variable}: {reason}", file=sys.stderr)
        raise SystemExit(2) from None
