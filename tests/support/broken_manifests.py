"""PodCliqueSets broken in the ways a user breaks them, each with the words the offline
verdicts contain; the first names the field the cluster (webhook or API server) names too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from tests.support.manifests import fixture

Change = Callable[[dict[str, Any]], None]


def single() -> dict[str, Any]:
    pcs = fixture("podcliquesets/single-clique.yaml")
    pcs["spec"]["template"]["cliques"][0]["spec"]["podSpec"].pop("schedulerName", None)
    return pcs


def clique(pcs: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = pcs["spec"]["template"]["cliques"][0]["spec"]
    return spec


def no_pod_spec(pcs: dict[str, Any]) -> None:
    del clique(pcs)["podSpec"]


def bad_quantity(pcs: dict[str, Any]) -> None:
    container = clique(pcs)["podSpec"]["containers"][0]
    container["resources"] = {"requests": {"cpu": "two"}}


def bad_name(pcs: dict[str, Any]) -> None:
    pcs["metadata"]["name"] = "Bad_Name"


def negative_replicas(pcs: dict[str, Any]) -> None:
    pcs["spec"]["replicas"] = -1


def misspelt(pcs: dict[str, Any]) -> None:
    clique(pcs)["minAvaliable"] = 1


def typo_for_a_required_field(pcs: dict[str, Any]) -> None:
    pcs["spec"]["replicaz"] = pcs["spec"].pop("replicas")


def strategy(kind: str) -> Change:
    def change(pcs: dict[str, Any]) -> None:
        pcs["spec"]["updateStrategy"] = {"type": kind}

    return change


def rolling_update(**config: object) -> Change:
    def change(pcs: dict[str, Any]) -> None:
        pcs["spec"]["template"]["cliques"][0]["rollingUpdate"] = config

    return change


def on_delete_with_rolling_update(pcs: dict[str, Any]) -> None:
    strategy("OnDelete")(pcs)
    rolling_update(maxUnavailable=1)(pcs)


ROLLING: Final = "spec.template.cliques[0].rollingUpdate"

CASES: dict[str, tuple[Change, list[str]]] = {
    "no podSpec": (no_pod_spec, ["podSpec"]),
    "a bad quantity": (bad_quantity, ["resources.requests"]),
    "a bad name": (bad_name, ['metadata.name: "Bad_Name" is not a DNS-1123 label']),
    "replicas -1": (negative_replicas, ["spec.replicas: must be >= 0, is -1"]),
    "a misspelt field": (misspelt, ["spec.template.cliques[0].spec.minAvaliable: unknown field"]),
    "a typo for a required field": (typo_for_a_required_field, ["spec.replicaz: unknown field"]),
    "Coherent": (strategy("Coherent"), ["spec.updateStrategy.type: Coherent is stored but not"]),
    "rollingUpdate under OnDelete": (
        on_delete_with_rolling_update,
        [f"{ROLLING}: applies to RollingRecreate only"],
    ),
    "maxUnavailable 0": (
        rolling_update(maxUnavailable=0),
        [f"{ROLLING}.maxUnavailable: must be at least 1, is 0"],
    ),
    "maxUnavailable 0%": (
        rolling_update(maxUnavailable="0%"),
        [f'{ROLLING}.maxUnavailable: must be a percentage from 1% to 100%, is "0%"'],
    ),
    "a bad progressDeadline": (
        rolling_update(progressDeadline="soon"),
        [f'{ROLLING}.progressDeadline: "soon" is not a duration'],
    ),
}

# Grove's update settings every verdict admits and the API server stores as written.
KEPT: dict[str, Change] = {
    "RollingRecreate with rollingUpdate": rolling_update(maxUnavailable=2, progressDeadline="10m"),
    "a percentage": rolling_update(maxUnavailable="50%"),
    "OnDelete": strategy("OnDelete"),
}


def field_named(words: list[str]) -> str:
    """The field a case's first words name (before the reason)."""
    return words[0].split(": ")[0]
