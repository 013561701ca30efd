"""What-if asks where a workload would be placed: a Kueue LocalQueue it names is left out."""

from __future__ import annotations

from typing import Any

from gangway_cli.whatif import _placement_only
from gangway_contracts import kueue


def test_a_podcliquesets_kueue_queue_is_left_out_and_nothing_else() -> None:
    pcs: dict[str, Any] = {
        "kind": "PodCliqueSet",
        "metadata": {"name": "p", "labels": {kueue.QUEUE_LABEL: "team", "app": "x"}},
    }
    assert _placement_only(pcs)["metadata"]["labels"] == {"app": "x"}
    assert pcs["metadata"]["labels"][kueue.QUEUE_LABEL] == "team", "the input is not changed"
    other: dict[str, Any] = {
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {kueue.QUEUE_LABEL: "t"}},
    }
    assert _placement_only(other) is other
