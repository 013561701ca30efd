"""What KAI's PodGroup says holds a gang back, in Gangway's vocabulary. Pure.

KAI writes ``status.schedulingConditions`` (one per node pool, type
``UnschedulableOnNodePool``) when it cannot place a gang, each with ``reasons``: its queue's
limit or quota (``OverLimit``, ``NonPreemptibleOverQuota``: OverQuota) or why no node fits
(Unschedulable). It keeps the last one after the gang is placed: the kit ignores it then.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gangway_contracts import why

UNSCHEDULABLE_ON_NODE_POOL: Final = "UnschedulableOnNodePool"
QUOTA_REASONS: Final = frozenset({"OverLimit", "NonPreemptibleOverQuota"})


def view_of(podgroup: Mapping[str, Any]) -> why.Verdict | None:
    status = podgroup.get("status") or {}
    found = [
        c
        for c in status.get("schedulingConditions") or []
        if c.get("type") == UNSCHEDULABLE_ON_NODE_POOL and c.get("status", "True") == "True"
    ]
    if not found:
        return None
    reasons = [r for c in found for r in c.get("reasons") or []]
    quota = [r for r in reasons if r.get("reason") in QUOTA_REASONS]
    if quota:
        return why.Verdict(why.OVER_QUOTA, _words(quota))
    words = _words(reasons) or "; ".join(
        sorted({str(c.get("message") or c.get("reason") or "") for c in found})
    )
    return why.Verdict(why.UNSCHEDULABLE, words or "KAI cannot place the gang")


def _words(reasons: list[Mapping[str, Any]]) -> str:
    """Each distinct message once, its reason before it when it adds something."""
    said = {
        f"{r['reason']}: {r['message']}"
        if r.get("reason") and r.get("message")
        else str(r.get("message") or r.get("reason") or "")
        for r in reasons
    }
    return "; ".join(sorted(s for s in said if s))
