"""A clique's podSpec checked as the API server checks a pod: each mistake named at its
field, with the API server's words; the podSpecs of every fixture pass."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import msgspec
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from gangway_contracts.podspec import pod_requests, pod_spec_errors, quantity

REPO = Path(__file__).resolve().parents[3]
# The test fixtures and the demo's samples.
MANIFESTS = (
    REPO / "tests" / "fixtures" / "podcliquesets",
    REPO / "cli" / "src" / "gangway_cli" / "samples",
)
AT = "spec.template.cliques[0].spec.podSpec"


def errors(spec: object) -> list[str]:
    return [str(e) for e in pod_spec_errors(msgspec.json.encode(spec), AT)]


def test_a_missing_podspec_is_required() -> None:
    assert [str(e) for e in pod_spec_errors(b"", AT)] == [
        f"{AT}: Required value: the clique's pods are made from it"
    ]
    assert errors(None) == [f"{AT}: Required value: the clique's pods are made from it"]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, f"{AT}.containers: Required value: at least one"),
        ({"containers": [{"name": "a"}]}, f"{AT}.containers[0].image: Required value"),
        ({"containers": [{"image": "x"}]}, f"{AT}.containers[0].name: Required value"),
        (
            {"containers": [{"name": "Main", "image": "x"}]},
            f'{AT}.containers[0].name: Invalid value: "Main": must be a DNS label (lower case '
            "letters, digits and '-', at most 63 characters)",
        ),
        (
            {
                "initContainers": [{"name": "a", "image": "x"}],
                "containers": [{"name": "a", "image": "x"}],
            },
            f'{AT}.containers[0].name: Duplicate value: "a"',
        ),
        (
            {
                "containers": [
                    {"name": "a", "image": "x", "resources": {"requests": {"cpu": "lots"}}}
                ]
            },
            f'{AT}.containers[0].resources.requests[cpu]: Invalid value: "lots": quantities must '
            "match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            {
                "containers": [
                    {
                        "name": "a",
                        "image": "x",
                        "resources": {"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}},
                    }
                ]
            },
            f'{AT}.containers[0].resources.requests[memory]: Invalid value: "2Gi": must be less '
            "than or equal to memory limit of 1Gi",
        ),
        (
            {"containers": [{"name": "a", "image": "x", "ports": [{"containerPort": 70000}]}]},
            f"{AT}.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 "
            "and 65535",
        ),
        (
            {"containers": [{"name": "a", "image": "x", "volumeMounts": [{"name": "data"}]}]},
            f'{AT}.containers[0].volumeMounts[0].name: Not found: "data": no volume of the '
            "podSpec has that name",
        ),
        (
            {"containers": [{"name": "a", "image": "x"}], "restartPolicy": "Sometimes"},
            f'{AT}.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
            '"OnFailure", "Never"',
        ),
        (
            {"containers": [{"name": "a", "image": "x", "ports": "80"}]},
            f"{AT}.containers[0].ports: Expected `array`, got `str`",
        ),
    ],
)
def test_each_mistake_is_named_at_its_field(spec: object, expected: str) -> None:
    assert errors(spec) == [expected]


def test_every_fixture_and_sample_passes() -> None:
    checked = 0
    for path in (p for folder in MANIFESTS for p in folder.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            for clique in (doc or {}).get("spec", {}).get("template", {}).get("cliques", []):
                assert errors(clique["spec"].get("podSpec")) == [], (path.name, clique["name"])
                checked += 1
    assert checked > 10


_SUFFIXES = {"": 0, "k": 3, "M": 6, "G": 9, "m": -3, "n": -9, "u": -6}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30}


@given(
    number=st.integers(min_value=0, max_value=10**6),
    suffix=st.sampled_from([*_SUFFIXES, *_BINARY]),
)
def test_a_quantity_is_its_number_times_its_suffix(number: int, suffix: str) -> None:
    value = quantity(f"{number}{suffix}")
    scale = Decimal(2) ** _BINARY[suffix] if suffix in _BINARY else Decimal(10) ** _SUFFIXES[suffix]
    assert value == number * scale


@given(st.text(max_size=12))
def test_any_text_is_a_quantity_or_refused_never_an_exception(text: str) -> None:
    quantity(text)


def test_a_node_name_and_a_bad_environment_variable_name_are_refused() -> None:
    container = {"name": "c", "image": "i", "env": [{"name": "1_OK"}, {"name": "A=B"}]}
    assert errors({"nodeName": "node-1", "containers": [container]}) == [
        f'{AT}.nodeName: Forbidden: "node-1": a gang\'s pods are placed by its scheduler (and '
        "made behind a scheduling gate, which the API server refuses beside nodeName)",
        f'{AT}.containers[0].env[1].name: Invalid value: "A=B": an environment variable name '
        "is printable ASCII characters other than '='",
    ]


def test_a_pods_requests_are_counted_as_the_scheduler_counts_them() -> None:
    """Containers and sidecars summed (a limit where no request is given), an init
    container's own when larger (beside the sidecars started before it), plus overhead."""
    spec = {
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
            {"name": "b", "resources": {"limits": {"nvidia.com/gpu": "4", "cpu": "1"}}},
        ],
        "initContainers": [
            {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
            {"name": "load", "resources": {"requests": {"memory": "3Gi", "cpu": "100m"}}},
        ],
        "overhead": {"cpu": "250m"},
    }
    assert pod_requests(msgspec.json.encode(spec)) == {
        "cpu": Decimal("2.75"),  # 0.5 + 1 + the sidecar's 1, + overhead 0.25
        "memory": Decimal(3 << 30),  # the init container's 3Gi, more than the containers' 1Gi
        "nvidia.com/gpu": Decimal(4),
    }
    assert pod_requests(b'{"containers": [{"name": "x"}]}') == {}
