"""Keep one scheduler object as the backend wants it: create, repair, replace, clean up.

What the backend last wrote is remembered as a hash of the desired object in an annotation,
so "nothing changed" costs one GET and no write, while a field we dropped from the desired
object still counts as a change. Fields someone else edited are caught by comparing the
desired spec with the live one; fields the scheduler adds itself (defaults, runtime knobs)
are left alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from enum import StrEnum
from typing import Any, Final

import msgspec

from gangway_backendkit.manifest import Manifest
from gangway_contracts import labels
from gangway_contracts.grove import PodGang
from gangway_contracts.incarnations import incarnated, incarnation_of
from gangway_runtime.kube import ApiResource, Kube, KubeError
from gangway_runtime.objects import version_of

SPEC_HASH_ANNOTATION = "gangway.dev/spec-hash"

# (desired, live) → desired with what the scheduler manages kept from the live object.
Keep = Callable[[Manifest, Manifest], Manifest]


class Unread:
    """``ensure``'s default starting point: the object as the API server has it now."""


UNREAD: Final = Unread()


class Change(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    REPLACED = "replaced"  # spec is immutable: deleted and created again
    UNCHANGED = "unchanged"
    NOT_OURS = "not ours"  # an object of that name Gangway did not make: left as it is


def contains(want: Any, have: Any) -> bool:
    """``have`` holds everything ``want`` says (maps: recursively; lists: item by item)."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(
            key in have and contains(value, have[key]) for key, value in want.items()
        )
    if isinstance(want, list):
        return (
            isinstance(have, list)
            and len(want) == len(have)
            and all(contains(w, h) for w, h in zip(want, have, strict=True))
        )
    return bool(want == have)


def spec_hash(desired: Manifest) -> str:
    canonical = msgspec.json.encode(
        {k: desired.get(k) for k in ("spec", "metadata")}, order="sorted"
    )
    return hashlib.sha256(canonical).hexdigest()[:16]


def _stamped(desired: Manifest) -> Manifest:
    meta = desired["metadata"]
    annotations = {**meta.get("annotations", {}), SPEC_HASH_ANNOTATION: spec_hash(desired)}
    return {**desired, "metadata": {**meta, "annotations": annotations}}


def unchanged(desired: Manifest, live: Manifest) -> bool:
    """Whether ``live`` is ``desired`` as :func:`ensure` would leave it (nothing to write)."""
    return _unchanged(_stamped(desired), live)


def _unchanged(desired: Manifest, live: Manifest) -> bool:
    meta, live_meta = desired["metadata"], live.get("metadata", {})
    return (
        live_meta.get("annotations", {}).get(SPEC_HASH_ANNOTATION)
        == meta["annotations"][SPEC_HASH_ANNOTATION]
        and contains(desired.get("spec", {}), live.get("spec", {}))
        and contains(meta.get("labels", {}), live_meta.get("labels", {}))
        and contains(meta.get("ownerReferences", []), live_meta.get("ownerReferences", []))
    )


async def ensure(
    kube: Kube,
    resource: ApiResource,
    desired: Manifest,
    *,
    field_manager: str,
    keep: Keep | None = None,
    immutable_spec: bool = False,
    only_ours: bool = False,
    start_from: Manifest | Unread | None = UNREAD,
    written: Callable[[str], None] | None = None,
) -> Change:
    """Converge one object on ``desired``. Conflicts surface as transient KubeErrors (409)
    and are retried by the caller's redelivery, reading the object afresh. ``only_ours``:
    an existing object without Gangway's managed-by label belongs to someone else (a name
    shared by the cluster, not a PodGang's own) and is left alone. ``start_from``: the
    object as already known (None: absent), written against with its resourceVersion, so
    no read is made; by default it is read. ``written``: given the resourceVersion of each
    create or update made."""
    meta = desired["metadata"]
    namespace, name = meta.get("namespace", ""), meta["name"]
    query = [("fieldManager", field_manager)]
    live = (
        await kube.read(resource, namespace, name) if isinstance(start_from, Unread) else start_from
    )
    if live is None:
        answer = await kube.request("POST", resource.path(namespace), query, body=_stamped(desired))
        _answered(answer, written)
        return Change.CREATED
    managed_by = live["metadata"].get("labels", {}).get(labels.MANAGED_BY)
    if only_ours and managed_by != labels.MANAGED_BY_GANGWAY:
        return Change.NOT_OURS
    if live["metadata"].get("deletionTimestamp"):
        # Going away (finalizers pending): create it again once it is gone.
        raise KubeError(409, "BeingDeleted", f"{resource.plural} {namespace}/{name} is terminating")
    desired = _stamped(keep(desired, live) if keep else desired)
    if _unchanged(desired, live):
        return Change.UNCHANGED
    live_meta = live["metadata"]
    if immutable_spec and not contains(desired.get("spec", {}), live.get("spec", {})):
        preconditions = {"uid": live_meta["uid"], "resourceVersion": live_meta["resourceVersion"]}
        await kube.request(
            "DELETE", resource.path(namespace, name), body={"preconditions": preconditions}
        )
        # Created at once when nothing holds the old one; otherwise AlreadyExists (409) and
        # the retry finds it terminating, then gone.
        answer = await kube.request("POST", resource.path(namespace), query, body=desired)
        _answered(answer, written)
        return Change.REPLACED
    # A full replace of spec (what someone else changed goes back), metadata merged (what
    # others added stays), guarded by the resourceVersion we read.
    updated = {
        **live,
        "metadata": {
            **live_meta,
            "labels": {**live_meta.get("labels", {}), **meta.get("labels", {})},
            "annotations": {**live_meta.get("annotations", {}), **meta["annotations"]},
            "ownerReferences": meta.get("ownerReferences", live_meta.get("ownerReferences")),
        },
        "spec": desired.get("spec", {}),
    }
    answer = await kube.request("PUT", resource.path(namespace, name), query, body=updated)
    _answered(answer, written)
    return Change.UPDATED


def _answered(answer: bytes, written: Callable[[str], None] | None) -> None:
    if written is not None:
        written(version_of(answer))


async def delete_owned(
    kube: Kube, resource: ApiResource, namespace: str, name: str, owner_uid: str
) -> bool:
    """Delete an object if, and only if, it still belongs to the given owner (a PodGang of
    the same name created since must keep its objects). True if something was deleted."""
    live = await kube.read(resource, namespace, name)
    if live is None:
        return False
    owners = live["metadata"].get("ownerReferences", [])
    if not any(ref.get("uid") == owner_uid for ref in owners):
        return False
    body = {
        "preconditions": {"uid": live["metadata"]["uid"]},
        "propagationPolicy": "Background",
    }
    try:
        await kube.request("DELETE", resource.path(namespace, name), body=body)
    except KubeError as exc:
        if exc.status in (404, 409):  # gone already, or replaced meanwhile
            return False
        raise
    return True


def owned_by(podgang: PodGang) -> Manifest:
    """The controller owner reference every backend object carries: deleting the PodGang
    deletes it (garbage collection), and the backend's consumer maps it back to the PodGang."""
    return {
        "apiVersion": podgang.api_version,
        "kind": podgang.kind,
        "name": podgang.metadata.name,
        "uid": podgang.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def gang_object_name(podgang: PodGang, name: str) -> str:
    """The name of the backend object ``name`` for the PodGang's incarnation: a gang made
    again is a new gang to its scheduler (``gangway_contracts.incarnations``)."""
    return incarnated(name, incarnation_of(podgang.metadata.annotations))


def carried_metadata(podgang: PodGang, name: str) -> Manifest:
    """Metadata of a backend object ``name`` (named for the PodGang's incarnation) for
    ``podgang``: its labels and annotations carried over (so selectors and tools find it),
    managed by Gangway, owned by the PodGang."""
    annotations = {
        key: value for key, value in podgang.metadata.annotations.items() if key not in _NOT_CARRIED
    }
    return {
        "name": gang_object_name(podgang, name),
        "namespace": podgang.metadata.namespace,
        "labels": {**podgang.metadata.labels, labels.MANAGED_BY: labels.MANAGED_BY_GANGWAY},
        "annotations": annotations,
        "ownerReferences": [owned_by(podgang)],
    }


_NOT_CARRIED = frozenset({"kubectl.kubernetes.io/last-applied-configuration", SPEC_HASH_ANNOTATION})
