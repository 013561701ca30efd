"""Hypothesis strategies for Grove objects, shared by the properties of several services."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

label = st.from_regex(r"\A[a-z]([a-z0-9]{0,6})\Z")


@st.composite
def podcliquesets(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(label, min_size=1, max_size=5, unique=True))
    cliques = []
    for name in names:
        replicas = draw(st.integers(1, 4))
        min_available = draw(st.none() | st.integers(1, replicas))
        spec: dict[str, Any] = {
            "roleName": name,
            "replicas": replicas,
            "podSpec": {"containers": [{"name": "c", "image": "i"}]},
        }
        if min_available is not None:
            spec["minAvailable"] = min_available
        cliques.append({"name": name, "spec": spec})
    # Scaling groups take disjoint slices of the cliques; the rest stay standalone.
    grouped = draw(st.lists(st.sampled_from(names), unique=True))
    groups = []
    for i in range(0, len(grouped), 2):
        replicas = draw(st.integers(1, 4))
        groups.append(
            {
                "name": f"g{i}",
                "cliqueNames": grouped[i : i + 2],
                "replicas": replicas,
                "minAvailable": draw(st.integers(1, replicas)),
            }
        )
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": draw(label), "namespace": "ns"},
        "spec": {
            "replicas": draw(st.integers(0, 3)),
            "template": {"cliques": cliques, "podCliqueScalingGroups": groups},
        },
    }
