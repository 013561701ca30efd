"""The admission service's Prometheus metrics (served on /metrics by the runtime's probes)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

REVIEWS = Counter(
    "gangway_admission_reviews",
    "AdmissionReviews answered, by operation, result (admitted, rejected) and reason",
    ["operation", "result", "reason"],
)
BAD_REQUESTS = Counter(
    "gangway_admission_bad_requests", "Requests that were not an AdmissionReview (HTTP 400)"
)
REVIEW_SECONDS = Histogram("gangway_admission_review_seconds", "One review, body read to answer")
BACKEND_SECONDS = Histogram(
    "gangway_admission_backend_seconds",
    "A backend's validate request, by backend and outcome (answered, unavailable)",
    ["backend", "outcome"],
)
DRY_RUN_SECONDS = Histogram(
    "gangway_admission_dry_run_seconds",
    "podgang's dry run of a PodCliqueSet's pods, by outcome (answered, unavailable)",
    ["outcome"],
)
TLS_RELOADS = Counter(
    "gangway_admission_tls_reloads",
    "Serving certificate loads by result (loaded, failed)",
    ["result"],
)
