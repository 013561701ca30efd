"""What a view's field says about its CRD schema beyond its Python type.

The CRDs Gangway ships are generated from the views (``gangway_contracts.crds``): a field's
type, default and docstring give its schema. An enum, a bound, a format, a list keyed by
name or a Kubernetes type inlined from the API server's OpenAPI ride on the field as
``Annotated[T, crd(...)]``. msgspec keeps that in ``Meta.extra`` and ignores it when it
decodes, so the views stay as lenient as they are (a newer Grove value still decodes) while
the API server holds stored objects to the schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Final

import msgspec

CRD_KEY: Final = "crd"


def crd(
    *,
    enum: Sequence[str] | None = None,
    format: str | None = None,
    pattern: str | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    minimum: int | None = None,
    list_map_keys: Sequence[str] | None = None,
    list_type: str | None = None,
    kubernetes: str | None = None,
    required: bool = False,
) -> msgspec.Meta:
    """CRD schema facets of one field. ``kubernetes`` names a type of the API server's
    OpenAPI (``io.k8s.api.core.v1.PodSpec``) whose schema the field takes whole;
    ``list_map_keys`` makes a list a map keyed by those fields (no two items share them);
    ``list_type`` says how server-side apply merges a list (``atomic``: replaced whole);
    ``required`` makes the API server require a field the view defaults (so that reading a
    manifest offline still works, and admission can say what is missing)."""
    facets: dict[str, Any] = {
        "enum": list(enum) if enum is not None else None,
        "format": format,
        "pattern": pattern,
        "minLength": min_length,
        "maxLength": max_length,
        "minimum": minimum,
    }
    if list_map_keys is not None:
        facets["x-kubernetes-list-type"] = "map"
        facets["x-kubernetes-list-map-keys"] = list(list_map_keys)
    if list_type is not None:
        facets["x-kubernetes-list-type"] = list_type
    if required:
        facets["required"] = True
    if kubernetes is not None:
        facets["kubernetes"] = kubernetes
    return msgspec.Meta(extra={CRD_KEY: {k: v for k, v in facets.items() if v is not None}})


Int32 = Annotated[int, crd(format="int32")]
Int64 = Annotated[int, crd(format="int64")]
Timestamp = Annotated[str, crd(format="date-time")]  # RFC 3339, as metav1.Time is written
