"""The podgang service's Prometheus metrics (served on /metrics by the runtime's probes)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

RECONCILES = Counter(
    "gangway_podgang_reconciles",
    "PodCliqueSet reconciles that succeeded, by result: converged, waiting (on a backend or "
    "the scheduler); failures are gangway_consumer_handled{result=retried|dead-lettered}",
    ["result"],
)
RECONCILE_SECONDS = Histogram(
    "gangway_podgang_reconcile_seconds", "One reconcile, read model to last write mirrored"
)
WRITES = Counter(
    "gangway_podgang_api_writes",
    "Writes to the API server by object kind and verb (Events not counted)",
    ["kind", "verb"],
)
WRITES_PER_GANG = Histogram(
    "gangway_podgang_api_writes_per_gang",
    "Writes one PodGang took from creation to its last gate lifted (this process's count)",
    buckets=(2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096),
)
PHANTOMS = Counter(
    "gangway_podgang_phantoms",
    "PodCliqueSets the store held and the API server did not (a forged record, a deletion "
    "not yet mirrored): nothing more is made for them",
)
