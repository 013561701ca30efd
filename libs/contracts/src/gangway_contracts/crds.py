"""The CustomResourceDefinitions of PodCliqueSet, PodClique, PodCliqueScalingGroup and
PodGang, generated from the views.

One source of truth: the views in ``grove.py`` are what every service decodes, and their
fields give the CRD schemas: type, default and docstring (the field's description in
``kubectl explain``), plus the facets of ``crdtypes.crd``. The schema is structural and
declares every field, so the API server prunes unknown ones and refuses them under
``kubectl --validate=strict``. Kubernetes types a PodCliqueSet embeds (PodSpec and two
more) come whole from the API server's own OpenAPI of the version Gangway builds, passed in
as ``openapi``: references inlined, int-or-string marked, descriptions and defaults left
out (the API server defaults a pod when podgang makes it, and its words are not ours to
ship) but for the keys of map-lists, which a CRD must default.

What is not derived from the views (names, printer columns, subresources) is Grove's and
written below; ``tests/unit/deploy/test_crd_compat.py`` holds both to Grove's CRDs.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

import msgspec
import msgspec.inspect as mi

from gangway_contracts.cliques import (
    PODCLIQUE_PLURAL,
    PODCLIQUESCALINGGROUP_PLURAL,
    PodClique,
    PodCliqueScalingGroup,
)
from gangway_contracts.crdtypes import CRD_KEY
from gangway_contracts.grove import (
    GROVE_GROUP,
    GROVE_VERSION,
    PODCLIQUESET_PLURAL,
    PODGANG_PLURAL,
    SCHEDULER_GROUP,
    SCHEDULER_VERSION,
    PodCliqueSet,
    PodGang,
)

Schema = dict[str, Any]

_REF_PREFIX: Final = "#/components/schemas/"
_INT_OR_STRING: Final = frozenset(
    {
        "io.k8s.apimachinery.pkg.api.resource.Quantity",
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    }
)
# Object metadata below the root (an ephemeral volume's claim template) is kept as written:
# the API server validates it when it makes the claim.
_OPAQUE: Final = frozenset(
    {
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "io.k8s.apimachinery.pkg.runtime.RawExtension",
    }
)
# What a CRD schema keeps of an OpenAPI schema; the rest (descriptions, defaults, patch
# strategies, union discriminators) is left out.
_KEPT: Final = frozenset(
    {"type", "format", "enum", "required", "x-kubernetes-list-type",
     "x-kubernetes-list-map-keys", "x-kubernetes-map-type"}
)  # fmt: skip
_PRESERVE: Final = "x-kubernetes-preserve-unknown-fields"
_SCALARS: Final[dict[type[mi.Type], str]] = {
    mi.StrType: "string",
    mi.BoolType: "boolean",
    mi.IntType: "integer",
    mi.FloatType: "number",
}


@dataclass(frozen=True)
class Resource:
    """One custom resource: its view and what its CRD says beyond the schema."""

    view: type[msgspec.Struct]
    group: str
    version: str
    plural: str
    short_name: str
    # (name, type, JSON path), or with a priority: 1 is shown by `kubectl get -o wide` only
    columns: tuple[tuple[str, str, str] | tuple[str, str, str, int], ...]
    # The scale subresource (spec.replicas, status.replicas) and where its pod selector is;
    # None: no scale subresource.
    scale_selector: str | None
    file: str


_AGE: Final = ("Age", "date", ".metadata.creationTimestamp")
_MIN_BREACHED: Final = '.status.conditions[?(@.type=="MinAvailableBreached")].status'

RESOURCES: Final = (
    Resource(
        view=PodCliqueSet,
        group=GROVE_GROUP,
        version=GROVE_VERSION,
        plural=PODCLIQUESET_PLURAL,
        short_name="pcs",
        columns=(
            ("Replicas", "integer", ".spec.replicas"),
            ("Available", "integer", ".status.availableReplicas"),
            ("Updated", "integer", ".status.updatedReplicas"),
            ("PCLQs-Updated", "integer", ".status.updateProgress.updatedPodCliquesCount"),
            ("PCLQs-Total", "integer", ".status.updateProgress.totalPodCliquesCount"),
            (
                "PCSGs-Updated",
                "integer",
                ".status.updateProgress.updatedPodCliqueScalingGroupsCount",
            ),
            ("PCSGs-Total", "integer", ".status.updateProgress.totalPodCliqueScalingGroupsCount"),
            _AGE,
        ),
        scale_selector=".status.hpaPodSelector",
        file=f"{GROVE_GROUP}_{PODCLIQUESET_PLURAL}.yaml",
    ),
    Resource(
        view=PodClique,
        group=GROVE_GROUP,
        version=GROVE_VERSION,
        plural=PODCLIQUE_PLURAL,
        short_name="pclq",
        columns=(
            ("MinAvail", "integer", ".spec.minAvailable"),
            ("Replicas", "integer", ".spec.replicas"),
            ("Ready", "integer", ".status.readyReplicas"),
            ("Scheduled", "integer", ".status.scheduledReplicas"),
            ("Updated", "integer", ".status.updatedReplicas"),
            ("Gated", "integer", ".status.scheduleGatedReplicas", 1),
            ("MinBreached", "string", _MIN_BREACHED, 1),
            _AGE,
        ),
        scale_selector=".status.hpaPodSelector",  # an HPA or kubectl scale sets its pods
        file=f"{GROVE_GROUP}_{PODCLIQUE_PLURAL}.yaml",
    ),
    Resource(
        view=PodCliqueScalingGroup,
        group=GROVE_GROUP,
        version=GROVE_VERSION,
        plural=PODCLIQUESCALINGGROUP_PLURAL,
        short_name="pcsg",
        columns=(
            ("MinAvail", "integer", ".spec.minAvailable"),
            ("Replicas", "integer", ".spec.replicas"),
            ("Available", "integer", ".status.availableReplicas"),
            ("Scheduled", "integer", ".status.scheduledReplicas"),
            ("Updated", "integer", ".status.updatedReplicas"),
            ("PCLQs-Updated", "integer", ".status.updateProgress.updatedPodCliquesCount"),
            ("PCLQs-Total", "integer", ".status.updateProgress.totalPodCliquesCount"),
            ("MinBreached", "string", _MIN_BREACHED, 1),
            _AGE,
        ),
        scale_selector=".status.selector",  # an HPA or kubectl scale sets its replicas
        file=f"{GROVE_GROUP}_{PODCLIQUESCALINGGROUP_PLURAL}.yaml",
    ),
    Resource(
        view=PodGang,
        group=SCHEDULER_GROUP,
        version=SCHEDULER_VERSION,
        plural=PODGANG_PLURAL,
        short_name="pg",
        # Grove's Phase, then why it is or is not scheduled (gangway_contracts.why),
        # whether it is ready and its pods ready, counted; -o wide: the scheduler's words.
        columns=(
            ("Phase", "string", ".status.phase"),
            ("Scheduled", "string", '.status.conditions[?(@.type=="Scheduled")].reason'),
            ("Ready", "string", '.status.conditions[?(@.type=="Ready")].status'),
            ("Pods", "string", '.status.conditions[?(@.type=="Ready")].message'),
            _AGE,
            ("Message", "string", '.status.conditions[?(@.type=="Scheduled")].message', 1),
        ),
        scale_selector=None,
        file=f"{SCHEDULER_GROUP}_{PODGANG_PLURAL}.yaml",
    ),
)

# Every object's first three fields, the same in every CRD.
_ROOT_FIELDS: Final = {
    "apiVersion": {
        "type": "string",
        "description": "The group and version of the object's schema (group/version).",
    },
    "kind": {"type": "string", "description": "The object's type."},
    "metadata": {"type": "object"},
}


def custom_resource_definitions(openapi: Iterable[Mapping[str, Any]]) -> list[Schema]:
    """Every CRD Gangway ships, from the views and the API server's OpenAPI documents."""
    kubernetes = KubernetesSchemas(openapi)
    return [custom_resource_definition(resource, kubernetes) for resource in RESOURCES]


def custom_resource_definition(resource: Resource, kubernetes: KubernetesSchemas) -> Schema:
    kind = resource.view.__name__
    schema = view_schema(resource.view, kubernetes)
    schema["properties"].update(_ROOT_FIELDS)
    schema["required"] = [name for name in schema["required"] if name not in _ROOT_FIELDS]
    version: Schema = {
        "name": resource.version,
        "served": True,
        "storage": True,
        "additionalPrinterColumns": [
            {
                "jsonPath": column[2],
                "name": column[0],
                "type": column[1],
                **({"priority": column[3]} if len(column) > 3 else {}),
            }
            for column in resource.columns
        ],
        "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": schema},
    }
    if resource.scale_selector is not None:
        version["subresources"]["scale"] = {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": resource.scale_selector,
        }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{resource.plural}.{resource.group}",
            "labels": {"app.kubernetes.io/part-of": "gangway"},
        },
        "spec": {
            "group": resource.group,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": resource.plural,
                "shortNames": [resource.short_name],
                "singular": kind.lower(),
            },
            "scope": "Namespaced",
            "versions": [version],
        },
    }


def view_schema(view: type[msgspec.Struct], kubernetes: KubernetesSchemas) -> Schema:
    """The CRD schema of a view: structural, described, Kubernetes types inlined."""
    info = mi.type_info(view)
    assert isinstance(info, mi.StructType)
    return _ViewSchemas(kubernetes).struct(info)


class KubernetesSchemas:
    """Schemas of Kubernetes types, from the API server's OpenAPI v3 documents, in the form
    a CRD takes: structural, every reference inlined."""

    def __init__(self, openapi: Iterable[Mapping[str, Any]]) -> None:
        self._components: dict[str, Any] = {}
        for document in openapi:
            self._components.update(document["components"]["schemas"])

    def schema(self, name: str, seen: tuple[str, ...] = ()) -> Schema:
        if name in _INT_OR_STRING:
            return {
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
            }
        if name in _OPAQUE:
            return {"type": "object", _PRESERVE: True}
        if name in seen:
            raise ValueError(f"{name} refers to itself ({' → '.join(seen)}): not structural")
        if name not in self._components:
            raise KeyError(f"{name}: not a type of the Kubernetes OpenAPI given")
        return self._node(self._components[name], (*seen, name))

    def _node(self, node: Mapping[str, Any], seen: tuple[str, ...]) -> Schema:
        if "$ref" in node:
            return self.schema(node["$ref"].removeprefix(_REF_PREFIX), seen)
        if "allOf" in node:  # a reference with a description beside it
            (only,) = node["allOf"]
            return self._node(only, seen)
        out: Schema = {key: value for key, value in node.items() if key in _KEPT}
        if "properties" in node:
            out["properties"] = {
                name: self._node(child, seen) for name, child in node["properties"].items()
            }
        if "items" in node:
            out["items"] = self._node(node["items"], seen)
            self._default_map_keys(out["items"], node)
        if isinstance(node.get("additionalProperties"), dict):
            out["additionalProperties"] = self._node(node["additionalProperties"], seen)
        return out

    def _default_map_keys(self, items: Schema, node: Mapping[str, Any]) -> None:
        """A map-list's keys must be required or defaulted (else the API server refuses the
        CRD): keep the API server's default of each key that is not required (a port's
        protocol, TCP)."""
        source = self._resolved(node["items"])
        for key in node.get("x-kubernetes-list-map-keys", []):
            if key not in items.get("required", []):
                items["properties"][key]["default"] = source["properties"][key]["default"]

    def _resolved(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        while "$ref" in node or "allOf" in node:
            if "$ref" in node:
                node = self._components[node["$ref"].removeprefix(_REF_PREFIX)]
            else:
                (node,) = node["allOf"]
        return node


class _ViewSchemas:
    """CRD schemas of msgspec views."""

    def __init__(self, kubernetes: KubernetesSchemas) -> None:
        self._kubernetes = kubernetes

    def struct(self, info: mi.StructType) -> Schema:
        docs = field_docs(info.cls)
        properties: Schema = {}
        required: list[str] = []
        for field in info.fields:
            facets = _facets(field.type)
            schema = self.of(field.type)
            if field.name in docs:
                schema["description"] = docs[field.name]
            default = _crd_default(field)
            if default is not None:
                schema["default"] = default
            if field.required or facets.get("required"):
                required.append(field.encode_name)
            properties[field.encode_name] = schema
        out: Schema = {"type": "object", "properties": properties}
        if required:
            out["required"] = sorted(required)
        if description := class_doc(info.cls):
            out["description"] = description
        return out

    def of(self, type_: mi.Type) -> Schema:
        facets = _facets(type_)
        type_ = _unwrap(type_)
        if "kubernetes" in facets:
            schema = self._kubernetes.schema(facets["kubernetes"])
        else:
            schema = self._plain(type_)
        schema.update({k: v for k, v in facets.items() if k not in ("kubernetes", "required")})
        return schema

    def _plain(self, type_: mi.Type) -> Schema:
        match type_:
            case mi.StructType():
                return self.struct(type_)
            case mi.ListType():
                return {"type": "array", "items": self.of(type_.item_type)}
            case mi.DictType() if not isinstance(_unwrap(type_.value_type), mi.AnyType):
                return {"type": "object", "additionalProperties": self.of(type_.value_type)}
            case mi.DictType() | mi.RawType() | mi.AnyType():
                return {"type": "object", _PRESERVE: True}
        scalar = _SCALARS.get(type(type_))
        if scalar is None:
            raise TypeError(f"no CRD schema for {type_!r}")
        return {"type": scalar}


def _unwrap(type_: mi.Type) -> mi.Type:
    """The type itself: annotations and an optional's None taken off (a union of two
    types, such as an int-or-string, stays one: its ``kubernetes`` facet says its schema)."""
    while True:
        if isinstance(type_, mi.Metadata):
            type_ = type_.type
        elif isinstance(type_, mi.UnionType) and len(members := _members(type_)) == 1:
            (type_,) = members
        else:
            return type_


def _members(union: mi.UnionType) -> list[mi.Type]:
    return [t for t in union.types if not isinstance(t, mi.NoneType)]


def _facets(type_: mi.Type) -> dict[str, Any]:
    """The ``crd(...)`` facets on a type (outermost last, so it wins)."""
    found: list[dict[str, Any]] = []
    while isinstance(type_, mi.Metadata | mi.UnionType):
        if isinstance(type_, mi.Metadata):
            found.append((type_.extra or {}).get(CRD_KEY, {}))
            type_ = type_.type
        elif len(members := _members(type_)) == 1:
            (type_,) = members
        else:
            break
    merged: dict[str, Any] = {}
    for facets in reversed(found):
        merged.update(facets)
    return merged


def _crd_default(field: mi.Field) -> object:
    """The default the API server fills in: a view's scalar default, except the empty string
    (a view's "not set", not a value)."""
    value = field.default
    if isinstance(value, bool | int | float) or (isinstance(value, str) and value):
        return value
    return None


@cache
def field_docs(cls: type) -> dict[str, str]:
    """The docstrings of a class's fields (a string right below the field), its bases'
    included."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__.partition(".")[0] in ("builtins", "msgspec"):
            continue
        (node,) = ast.parse(textwrap.dedent(inspect.getsource(klass))).body
        assert isinstance(node, ast.ClassDef)
        for stmt, after in zip(node.body, node.body[1:], strict=False):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[stmt.target.id] = _one_line(after.value.value)
    return docs


def class_doc(cls: type) -> str:
    return _one_line(cls.__doc__ or "")


def _one_line(doc: str) -> str:
    """A docstring as a description: its lines joined (they are wrapped for the source)."""
    return " ".join(doc.split())
