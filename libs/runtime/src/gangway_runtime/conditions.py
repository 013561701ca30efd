"""The backend's condition on a PodGang, merged into the conditions others own. No I/O."""

from __future__ import annotations

from typing import Any

from gangway_contracts.k8s import Condition


def merged_conditions(
    current: list[dict[str, Any]], condition: Condition
) -> list[dict[str, Any]] | None:
    """``current`` with ``condition`` in place of its type's entry, or None when nothing would
    change (no write at all). The transition time moves only when the status does, as
    metav1.Condition wants; other conditions are kept exactly as they are."""
    wanted: dict[str, Any] = {
        "type": condition.type,
        "status": condition.status,
        "reason": condition.reason,
        "message": condition.message,
        "lastTransitionTime": condition.last_transition_time,
    }
    if condition.observed_generation is not None:
        wanted["observedGeneration"] = condition.observed_generation
    merged: list[dict[str, Any]] = []
    found = False
    for existing in current:
        if existing.get("type") != condition.type:
            merged.append(existing)
            continue
        found = True
        if existing.get("status") == condition.status:
            wanted["lastTransitionTime"] = existing.get(
                "lastTransitionTime", wanted["lastTransitionTime"]
            )
        if all(existing.get(k) == v for k, v in wanted.items()):
            return None
        merged.append(wanted)
    if not found:
        merged.append(wanted)
    return merged
