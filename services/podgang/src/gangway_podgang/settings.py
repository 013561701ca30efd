"""The podgang service's settings: the runtime's, plus how it consumes, writes and waits."""

from __future__ import annotations

from pydantic import Field

from gangway_runtime.settings import LimitSettings


class PodgangSettings(LimitSettings):
    # PodCliqueSets reconciled at once by one replica.
    workers: int = Field(default=8, ge=1)
    # API writes in flight at once across all of them (pod creates, gate lifts…).
    write_concurrency: int = Field(default=32, ge=1)
    fetch_batch: int = Field(default=256, ge=1)
    # Messages taken but not yet acknowledged; a burst of pod events coalesces below this.
    max_ack_pending: int = Field(default=20_000, ge=1)
    # A handler running longer than this is presumed dead and its message redelivered.
    ack_wait_seconds: float = Field(default=120.0, gt=0)
    # Deliveries of a message failing for a reason retrying cannot fix, before dead letter.
    # Reasons retrying can fix (backend down, API server busy) retry without limit.
    max_attempts: int = Field(default=8, ge=1)
    # How long a prepare-pods or validate request waits for the backend.
    request_timeout_seconds: float = Field(default=10.0, gt=0)
    # How long to wait for the read model to show a message, or our own writes.
    read_model_timeout_seconds: float = Field(default=30.0, gt=0)
    # Decide-write-wait rounds in one reconcile before leaving the rest to later events.
    max_rounds: int = Field(default=8, ge=1)
    # Every PodCliqueSet is reconciled at start and then this often, events or not.
    resync_seconds: float = Field(default=600.0, gt=0)
