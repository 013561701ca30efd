"""The CRD generator: views to structural schemas, Kubernetes OpenAPI types inlined."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import pytest

from gangway_contracts.crds import KubernetesSchemas, view_schema
from gangway_contracts.crdtypes import Int32, crd
from gangway_contracts.k8s import Wire

REF = "#/components/schemas/"
# A small OpenAPI v3 document shaped as the API server publishes its own.
OPENAPI: dict[str, Any] = {
    "components": {
        "schemas": {
            "example.Box": {
                "description": "not ours to ship",
                "type": "object",
                "required": ["size"],
                "properties": {
                    "size": {"allOf": [{"$ref": f"{REF}example.Quantity"}], "description": "x"},
                    "ports": {
                        "type": "array",
                        "items": {"$ref": f"{REF}example.Port"},
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["port", "protocol"],
                        "x-kubernetes-patch-strategy": "merge",
                    },
                    "meta": {"$ref": f"{REF}io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
                },
            },
            "example.Port": {
                "type": "object",
                "required": ["port"],
                "properties": {
                    "port": {"type": "integer", "format": "int32", "default": 0},
                    "protocol": {"type": "string", "default": "TCP"},
                    "name": {"type": "string", "default": ""},
                },
            },
            "example.Quantity": {"oneOf": [{"type": "string"}, {"type": "number"}]},
            "example.Loop": {
                "type": "object",
                "properties": {"next": {"$ref": f"{REF}example.Loop"}},
            },
        }
    }
}
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"


def test_kubernetes_types_are_inlined_structural_without_their_words_and_defaults() -> None:
    document = {"components": {"schemas": dict(OPENAPI["components"]["schemas"])}}
    document["components"]["schemas"]["example.Box"]["properties"]["size"] = {
        "$ref": f"{REF}{QUANTITY}"
    }
    assert KubernetesSchemas([document]).schema("example.Box") == {
        "type": "object",
        "required": ["size"],
        "properties": {
            "size": {
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
            },
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["port", "protocol"],
                "items": {
                    "type": "object",
                    "required": ["port"],
                    "properties": {
                        "port": {"type": "integer", "format": "int32"},
                        # A map-list key must be required or defaulted: its default is kept.
                        "protocol": {"type": "string", "default": "TCP"},
                        "name": {"type": "string"},
                    },
                },
            },
            "meta": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }


def test_a_type_that_refers_to_itself_is_refused() -> None:
    with pytest.raises(ValueError, match="refers to itself"):
        KubernetesSchemas([OPENAPI]).schema("example.Loop")
    with pytest.raises(KeyError, match=r"example\.Missing"):
        KubernetesSchemas([OPENAPI]).schema("example.Missing")


class Part(Wire, frozen=True, kw_only=True):
    """A part."""

    name: str
    """Its name."""


class Thing(Wire, frozen=True, kw_only=True):
    """A thing to test with."""

    parts: Annotated[list[Part], crd(list_map_keys=["name"])]
    """Its parts,
    one per name."""
    count: Int32 = 1
    """How many."""
    mode: Annotated[str, crd(enum=["A", "B"])] = "A"
    label: Annotated[str, crd(required=True)] = ""
    note: str | None = None
    tags: dict[str, str] = {}
    extra: dict[str, Any] | None = None
    box: Annotated[msgspec.Raw, crd(kubernetes="example.Port")] = msgspec.Raw(b"{}")


def test_a_view_becomes_a_structural_schema() -> None:
    schema = view_schema(Thing, KubernetesSchemas([OPENAPI]))
    assert schema == {
        "type": "object",
        "description": "A thing to test with.",
        "required": ["label", "parts"],
        "properties": {
            "parts": {
                "type": "array",
                "description": "Its parts, one per name.",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "description": "A part.",
                    "required": ["name"],
                    "properties": {"name": {"type": "string", "description": "Its name."}},
                },
            },
            "count": {
                "type": "integer",
                "format": "int32",
                "description": "How many.",
                "default": 1,
            },
            "mode": {"type": "string", "enum": ["A", "B"], "default": "A"},
            "label": {"type": "string"},  # "" is the view's unset, not a default
            "note": {"type": "string"},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "box": {
                "type": "object",
                "required": ["port"],
                "properties": {
                    "port": {"type": "integer", "format": "int32"},
                    "protocol": {"type": "string"},
                    "name": {"type": "string"},
                },
            },
        },
    }
