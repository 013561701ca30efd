"""A backend's settings: the runtime's, plus how it consumes and retries."""

from __future__ import annotations

from pydantic import Field

from gangway_runtime.settings import ServiceSettings


class BackendSettings(ServiceSettings):
    # Deliveries of one message before it goes to the dead-letter subject.
    max_attempts: int = Field(default=8, ge=1)
    # PodGangs converged at once by one replica (API writes stay bounded by this).
    concurrency: int = Field(default=8, ge=1)
    fetch_batch: int = Field(default=32, ge=1)
    # A handler running longer than this is presumed dead and its message redelivered.
    ack_wait_seconds: float = Field(default=120.0, gt=0)
