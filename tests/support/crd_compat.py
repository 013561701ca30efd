"""Is our CRD schema API-compatible with Grove's? Both directions that matter:

- no stricter: every object valid under Grove's schema is valid under ours (required fields,
  enums, bounds, patterns and CEL rules of ours are a subset of Grove's), and defaults are
  the same, so the stored object means the same thing;
- no loss: where ours does not model a field, it preserves unknown fields instead of
  pruning them, and it invents no field Grove does not have.

Below a Kubernetes type (a clique's podSpec…) ours is the API server's own OpenAPI of the
version Gangway builds and Grove's is controller-gen's of the version Grove builds. There,
fields of a newer Kubernetes are not inventions, defaults are left to the API server when it
makes the pod (Grove's CRD fills some in when it stores the PodCliqueSet: the pod is the
same), and ``x-kubernetes-map-type`` (how server-side apply merges, not what is valid) may
differ. Everything else is held to Grove's as above.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

Schema = dict[str, Any]

_LOWER_BOUNDS = ("minimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "maxLength", "maxItems", "maxProperties")
_SAME_WHEN_SET = ("pattern", "format", "type")
_LIST_SEMANTICS = ("x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type")
_PRESERVE = "x-kubernetes-preserve-unknown-fields"


def version_schema(crd: Schema, version: str) -> Schema:
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            schema: Schema = v["schema"]["openAPIV3Schema"]
            return schema
    raise KeyError(version)


def compat_problems(
    ours: Schema,
    upstream: Schema,
    path: str = "",
    kubernetes_types: frozenset[str] = frozenset(),
    *,
    in_kubernetes_type: bool = False,
) -> Iterator[str]:
    """Every way ``ours`` is stricter than, or loses data compared with, ``upstream``.
    ``kubernetes_types``: the paths whose schema is a Kubernetes type's (see above)."""
    relaxed = in_kubernetes_type or path in kubernetes_types
    yield from _constraint_problems(ours, upstream, path or "<root>", relaxed=relaxed)
    yield from _structure_problems(ours, upstream, path, kubernetes_types, relaxed=relaxed)


def _constraint_problems(
    ours: Schema, upstream: Schema, at: str, *, relaxed: bool
) -> Iterator[str]:
    for key in _SAME_WHEN_SET:
        if key in ours and ours[key] != upstream.get(key):
            yield f"{at}: {key} {ours[key]!r}, Grove has {upstream.get(key)!r}"
    extra_required = set(ours.get("required", [])) - set(upstream.get("required", []))
    if extra_required:
        yield f"{at}: requires {sorted(extra_required)}, Grove does not"
    if "enum" in ours and not set(upstream.get("enum", [None])) <= set(ours["enum"]):
        yield f"{at}: enum {ours['enum']} narrower than Grove's {upstream.get('enum')}"
    if ours.get("default") != upstream.get("default") and not (relaxed and "default" not in ours):
        yield f"{at}: default {ours.get('default')!r}, Grove has {upstream.get('default')!r}"
    for key in _LOWER_BOUNDS:
        if key in ours and (key not in upstream or ours[key] > upstream[key]):
            yield f"{at}: {key} {ours[key]} stricter than Grove's {upstream.get(key)}"
    for key in _UPPER_BOUNDS:
        if key in ours and (key not in upstream or ours[key] < upstream[key]):
            yield f"{at}: {key} {ours[key]} stricter than Grove's {upstream.get(key)}"
    for rule in ours.get("x-kubernetes-validations", []):
        if rule not in upstream.get("x-kubernetes-validations", []):
            yield f"{at}: CEL rule {rule.get('rule')!r} is not Grove's"
    for key in _LIST_SEMANTICS:
        if relaxed and key == "x-kubernetes-map-type":
            continue
        if upstream.get(key) != ours.get(key) and "type" in ours:
            yield f"{at}: {key} {ours.get(key)!r}, Grove has {upstream.get(key)!r}"
    if upstream.get(_PRESERVE) and not ours.get(_PRESERVE):
        yield f"{at}: Grove preserves unknown fields here, ours would prune them"


def _structure_problems(
    ours: Schema, upstream: Schema, path: str, kubernetes_types: frozenset[str], *, relaxed: bool
) -> Iterator[str]:
    ours_props: Schema = ours.get("properties", {})
    upstream_props: Schema = upstream.get("properties", {})
    opaque = ours.get(_PRESERVE) and not ours_props

    def below(ours: Schema, upstream: Schema, at: str) -> Iterator[str]:
        return compat_problems(ours, upstream, at, kubernetes_types, in_kubernetes_type=relaxed)

    for name, child in ours_props.items():
        child_path = f"{path}.{name}" if path else name
        if name not in upstream_props:
            if not relaxed:
                yield f"{child_path}: not a field of Grove's schema"
            continue
        yield from below(child, upstream_props[name], child_path)
    unmodelled = sorted(set(upstream_props) - set(ours_props))
    if unmodelled and not ours.get(_PRESERVE):
        yield f"{path or '<root>'}: would prune Grove's fields {unmodelled}"
    if "items" in ours and not opaque:
        yield from below(ours["items"], upstream.get("items", {}), f"{path}[]")
    if isinstance(ours.get("additionalProperties"), dict):
        yield from below(
            ours["additionalProperties"], upstream.get("additionalProperties", {}), f"{path}{{}}"
        )


def declared_paths(schema: Schema, path: str = "") -> Iterator[str]:
    """Every field path a schema declares (``spec.podgroups[].name``)."""
    for name, child in schema.get("properties", {}).items():
        child_path = f"{path}.{name}" if path else name
        yield child_path
        yield from declared_paths(child, child_path)
    if "items" in schema:
        yield from declared_paths(schema["items"], f"{path}[]")
