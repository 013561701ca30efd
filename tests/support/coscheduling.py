"""What the Coscheduling backend's tests share: its configuration, a PodGang it owns and the
PodGroup it makes of it."""

from __future__ import annotations

from typing import Any

from gangway_backend_coscheduling.builtin import NAME as COSCHEDULING
from gangway_backend_coscheduling.translate import PODGROUPS
from tests.integration.watcher.conftest import podgang

CONFIG = {"profiles": [{"name": COSCHEDULING, "config": {"scheduleTimeoutSeconds": 20}}]}


def base_gang(namespace: str) -> dict[str, Any]:
    return podgang(namespace, "llama-disagg-0", COSCHEDULING)


def podgroup(name: str) -> dict[str, Any]:
    return {"apiVersion": PODGROUPS.api_version, "kind": "PodGroup", "metadata": {"name": name}}
