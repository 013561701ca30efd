"""Reading test manifests and comparing decoded views with what they came from
(``is_subset``: every value of the first appears at the same place in the second)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gangway_backendkit.converge import contains as is_subset
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet
from tests.support.paths import FIXTURES

__all__ = ["fixture", "fixtures", "inference_podcliqueset", "is_subset", "on_scheduler"]


def fixture(relative: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((FIXTURES / relative).read_text())
    return doc


def fixtures(folder: str) -> list[Path]:
    return sorted((FIXTURES / folder).glob("*.yaml"))


def on_scheduler(pcs: dict[str, Any], scheduler: str) -> dict[str, Any]:
    """The PodCliqueSet with every clique's pods naming ``scheduler`` (changed in place)."""
    for clique in pcs["spec"]["template"]["cliques"]:
        clique["spec"]["podSpec"]["schedulerName"] = scheduler
    return pcs


def inference_podcliqueset() -> PodCliqueSet:
    """The disaggregated-inference fixture, one replica, at generation 3, decoded."""
    doc = fixture("podcliquesets/disaggregated-inference.yaml")
    doc["spec"]["replicas"] = 1
    doc["metadata"]["generation"] = 3
    return from_object(doc, PodCliqueSet)
