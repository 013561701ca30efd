"""Per Kubernetes minor: the Go toolchain it builds with, the feature gates and API versions
the control plane turns on (the minors the README's loop covers)."""

from __future__ import annotations

import pytest

from gangway_localcluster.build import go_toolchain
from gangway_localcluster.controlplane import feature_gates, runtime_config


@pytest.mark.parametrize(
    ("version", "toolchain"),
    [
        ("1.35.4", "local"),
        ("1.37.2", "local"),
        ("1.38.0-beta.0", "go1.27.3"),
        ("1.38.1", "go1.27.3"),
    ],
)
def test_only_kubernetes_1_38_and_later_take_go_1_27_from_the_module_proxy(
    version: str, toolchain: str
) -> None:
    assert go_toolchain(version) == toolchain


@pytest.mark.parametrize(
    ("minor", "gates", "apis"),
    [
        (36, "GenericWorkload=true,GangScheduling=true", "scheduling.k8s.io/v1alpha2=true"),
        (
            37,
            "GenericWorkload=true,CompositePodGroup=true,TopologyAwareWorkloadScheduling=true",
            "scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true",
        ),
        (
            38,
            "GenericWorkload=true,CompositePodGroup=true,TopologyAwareWorkloadScheduling=true",
            "scheduling.k8s.io/v1beta1=true",
        ),
    ],
)
def test_composite_pod_groups_are_turned_on_where_a_minor_has_them(
    minor: int, gates: str, apis: str
) -> None:
    assert (feature_gates(minor), runtime_config(minor)) == (gates, apis)
