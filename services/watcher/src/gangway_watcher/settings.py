"""The watcher's settings: the runtime's, plus how it lists, watches and publishes.

The operator configuration (``GANGWAY_CONFIG_FILE``) decides which backend resources are
mirrored: those of its enabled backends.
"""

from __future__ import annotations

from gangway_runtime.settings import Positive, Seconds, ServiceSettings


class WatcherSettings(ServiceSettings):
    resync_seconds: Seconds = 600.0
    watch_timeout_seconds: Positive = 300
    list_page_size: Positive = 500
    max_in_flight: Positive = 256
