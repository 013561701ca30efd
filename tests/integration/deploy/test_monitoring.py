"""Metrics in deploy/: Service gangway-metrics lists every Gangway service, and the
monitoring component's ServiceMonitor and Grafana dashboard are built on what the services
really export."""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

import pytest
from prometheus_client import REGISTRY

from tests.support.deploy import OVERLAYS, pod_templates, rendered
from tests.support.paths import REPO

DASHBOARD = REPO / "deploy" / "components" / "monitoring" / "gangway-dashboard.json"
# Every module that defines a metric: the registry then knows every name.
METRIC_MODULES = (
    "gangway_runtime.consumer",
    "gangway_runtime.journal",
    "gangway_runtime.kube",
    "gangway_podgang.metrics",
    "gangway_backendkit.metrics",
    "gangway_watcher.metrics",
    "gangway_admission.metrics",
)


def _one(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    [found] = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_metrics_service_selects_every_gangway_service(overlay: str) -> None:
    docs = rendered(overlay)
    service = _one(docs, "Service", "gangway-metrics")
    selector = service["spec"]["selector"]
    selected = {
        owner
        for owner, template in pod_templates(docs).items()
        if selector.items() <= template["metadata"]["labels"].items()
    }
    deployments = {f"Deployment/{d['metadata']['name']}" for d in docs if d["kind"] == "Deployment"}
    # Every service, not NATS, nor the bus keeper (it serves nothing: NATS is all it talks to).
    assert selected == deployments - {"Deployment/gangway-bus-keeper"}
    for owner in selected:
        ports = [
            p["name"]
            for c in pod_templates(docs)[owner]["spec"]["containers"]
            for p in c.get("ports", [])
        ]
        assert service["spec"]["ports"][0]["targetPort"] in ports, owner


def test_the_monitoring_component_scrapes_the_service_and_ships_the_dashboard() -> None:
    docs = rendered("default", ("monitoring",))
    monitor = _one(docs, "ServiceMonitor", "gangway")
    service = _one(docs, "Service", "gangway-metrics")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]
    dashboard = _one(docs, "ConfigMap", "gangway-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["gangway-dashboard.json"]) == json.loads(
        DASHBOARD.read_text()
    )


def test_the_dashboard_asks_only_for_metrics_the_services_export() -> None:
    for module in METRIC_MODULES:
        importlib.import_module(module)
    # The series names each family is scraped as (a labelled family has no samples yet).
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}
    exported = {
        family.name + suffix
        for family in REGISTRY.collect()
        for suffix in suffixes.get(family.type, ("",))
    }
    panels = json.loads(DASHBOARD.read_text())["panels"]
    asked = {
        name
        for panel in panels
        for target in panel.get("targets", [])
        for name in re.findall(r"\b((?:gangway|process)_[a-z_]+)\{", target["expr"])
    }
    assert len(asked) > 15
    assert asked <= exported, sorted(asked - exported)
