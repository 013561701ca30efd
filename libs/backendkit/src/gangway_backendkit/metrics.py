"""A backend's Prometheus metrics (served on /metrics by the runtime's probes)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

SYNCS = Counter(
    "gangway_backend_syncs",
    "PodGang syncs by result: synced, failed (a SyncFailed verdict), error (retried), "
    "skipped (already synced at this generation), unchanged (a change to one of its "
    "resources that left it as desired, seen from the mirror), deleted, awaiting-status (a "
    "PodGang podgang made, before podgang's first status write: synced when that lands), "
    "early (its resources made while its pods are created: the condition waits for the "
    "pod references)",
    ["backend", "result"],
)
VIEWS = Counter(
    "gangway_backend_scheduler_views",
    "SchedulerBlocked conditions written on PodGangs, by reason: the scheduler's own objects "
    "holding a gang back (OverQuota, Unschedulable…), or no longer (NotBlocked)",
    ["backend", "reason"],
)
SYNC_SECONDS = Histogram(
    "gangway_backend_sync_seconds",
    "One PodGang sync, record read to condition written",
    ["backend"],
)
REQUESTS = Counter(
    "gangway_backend_requests",
    "prepare-pods and validate requests by outcome: ok, malformed, error",
    ["backend", "operation", "outcome"],
)
