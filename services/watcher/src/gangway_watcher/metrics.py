"""The watcher's Prometheus metrics (served on /metrics by the runtime's probes)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

OBSERVED = Counter(
    "gangway_watcher_events", "Watch events and listed objects received", ["kind", "type"]
)
PUBLISHED = Counter(
    "gangway_watcher_published",
    "Records offered to the store, by outcome: stored, duplicate (another watcher or an "
    "earlier try stored it), stale (the store already holds a newer version), failed",
    ["kind", "outcome"],
)
PUBLISH_RETRIES = Counter(
    "gangway_watcher_publish_retries", "Publishes retried because NATS did not answer", ["kind"]
)
RELISTS = Counter(
    "gangway_watcher_relists",
    "Full lists, by reason: start, gone (410), resync, error",
    ["kind", "reason"],
)
TOMBSTONES_ON_RELIST = Counter(
    "gangway_watcher_relist_tombstones",
    "Objects found deleted by a relist (their delete happened while not watching)",
    ["kind"],
)
PUBLISH_SECONDS = Histogram(
    "gangway_watcher_publish_seconds", "One JetStream publish, request to ack", ["kind"]
)
LAG_SECONDS = Histogram(
    "gangway_watcher_lag_seconds",
    "From receiving a change from the API server to its record stored (includes waiting for NATS)",
    ["kind"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300),
)
PENDING = Gauge("gangway_watcher_pending_publishes", "Records accepted but not yet stored")
