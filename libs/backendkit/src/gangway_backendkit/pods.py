"""Preparing pods: the checks every backend needs, and one way to set fields on a manifest."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gangway_backendkit.manifest import Manifest
from gangway_contracts import labels
from gangway_contracts.errors import FieldError
from gangway_contracts.grove import PodGang
from gangway_contracts.rpc import (
    PodsPrepared,
    PreparePodsFailed,
    PreparePodsReply,
    PreparePodsRequest,
)

# (pod, its PodGang, its podgroup name) → the prepared pod
PreparePod = Callable[[Manifest, PodGang, str], Manifest]


def amend(
    pod: Manifest,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
) -> Manifest:
    """A copy of ``pod`` with labels, annotations and top-level spec fields set."""
    meta = pod.get("metadata", {})
    return {
        **pod,
        "metadata": {
            **meta,
            "labels": {**meta.get("labels", {}), **(labels or {})},
            "annotations": {**meta.get("annotations", {}), **(annotations or {})},
        },
        "spec": {**pod.get("spec", {}), **(spec or {})},
    }


def _membership_errors(index: int, pod: Manifest, podgang: PodGang) -> list[FieldError]:
    pod_labels = pod.get("metadata", {}).get("labels", {})
    field = f"pods[{index}].metadata.labels"
    errors = []
    if pod_labels.get(labels.PODGANG) != podgang.metadata.name:
        errors.append(
            FieldError(
                field=f"{field}[{labels.PODGANG}]",
                reason=f'must name the PodGang "{podgang.metadata.name}"',
            )
        )
    groups = {g.name for g in podgang.spec.podgroups}
    if pod_labels.get(labels.PODCLIQUE) not in groups:
        errors.append(
            FieldError(
                field=f"{field}[{labels.PODCLIQUE}]",
                reason=f"must name one of the PodGang's podgroups: {', '.join(sorted(groups))}",
            )
        )
    return errors


def prepare_each(request: PreparePodsRequest, prepare: PreparePod) -> PreparePodsReply:
    """Check every pod belongs to the PodGang and one of its podgroups, then prepare each;
    nothing is prepared if any pod is wrong."""
    errors = [
        error
        for index, pod in enumerate(request.pods)
        for error in _membership_errors(index, pod, request.podgang)
    ]
    if errors:
        return PreparePodsFailed(
            reason="InvalidPod", message="pods do not belong to the PodGang", errors=errors
        )
    return PodsPrepared(
        pods=[
            prepare(pod, request.podgang, pod["metadata"]["labels"][labels.PODCLIQUE])
            for pod in request.pods
        ]
    )
