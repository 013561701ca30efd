"""The watcher's settings: the runtime's, plus how it lists, watches and publishes.

The operator configuration (``GANGWAY_CONFIG_FILE``) decides which backend resources are
mirrored: those of its enabled backends.
"""

from __future__ import annotations

from gangway_runtime.settings import Positive, Seconds, ServiceSettings


class WatcherSettings(ServiceSettings):
    # A full relist of every kind this often; unset, only at start, on 410 Gone and after a
    # failed list (a watch misses nothing; a relist holds the kind's changes back meanwhile).
    resync_seconds: Seconds | None = None
    watch_timeout_seconds: Positive = 300
    list_page_size: Positive = 500
    max_in_flight: Positive = 256
