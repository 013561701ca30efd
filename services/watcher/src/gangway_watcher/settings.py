"""The watcher's settings: the runtime's, plus how it lists, watches and publishes.

The operator configuration (``GANGWAY_CONFIG_FILE``) decides which backend resources are
mirrored: those of its enabled backends.
"""

from __future__ import annotations

from pydantic import Field

from gangway_runtime.settings import ServiceSettings


class WatcherSettings(ServiceSettings):
    resync_seconds: float = Field(default=600.0, gt=0)
    watch_timeout_seconds: int = Field(default=300, ge=1)
    list_page_size: int = Field(default=500, ge=1)
    max_in_flight: int = Field(default=256, ge=1)
