"""Prometheus, built from its Go module, for bench/dashboard.py: it scrapes a local run and
answers the dashboard's own queries, which the bench draws. Not built by `make test`.

Prometheus's go.mod replaces modules, so ``go install`` refuses it; a wrapper module
(``tools/prometheus``) copies its requirements and replaces. Built without its web UI's
assets (served from disk only, and not needed: the bench uses the HTTP API).

    python -m gangway_localcluster --write-module   # regenerates tools/prometheus
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from gangway_localcluster.build import WrappedModule

PROMETHEUS_VERSION: Final = "0.313.0"  # the Go module's version of Prometheus v3.13.0
MODULE: Final = "github.com/prometheus/prometheus"
BINARY: Final = "prometheus"
PROMETHEUS: Final = WrappedModule(
    "prometheus", MODULE, PROMETHEUS_VERSION, {f"{MODULE}/cmd/prometheus": BINARY}, ()
)


def ensure_prometheus(log: bool = False) -> Path:
    """The prometheus binary, built once into ``~/.cache/gangway/prometheus-v<version>/``."""
    return PROMETHEUS.build(log) / BINARY


def write_module(directory: Path | None = None) -> None:
    PROMETHEUS.write(
        "Prometheus, which bench/dashboard.py draws the Grafana dashboard with",
        directory=directory,
    )
