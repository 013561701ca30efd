"""A backend's settings: the runtime's and its consumer kit's (a backend may add its own)."""

from __future__ import annotations

from gangway_runtime.settings import ConsumerSettings


class BackendSettings(ConsumerSettings):
    """GANGWAY_WORKERS, GANGWAY_ACK_WAIT_SECONDS…: see ConsumerSettings."""
