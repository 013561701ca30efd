"""The queue a PodCliqueSet names for a scheduler with queues (KAI, Volcano). Pure.

One key names the queue, as a label or an annotation of the PodCliqueSet or of any of its
clique templates (Grove's users write it in either place). Every place that sets it must say
the same; none at all means the backend's default queue, or an error where there is none.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from gangway_contracts.errors import FieldError
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.k8s import is_dns_subdomain


@dataclass(frozen=True)
class Queue:
    name: str | None  # None when there is none, or the choices contradict each other
    field: str  # where it was set (or should be)
    errors: list[FieldError]
    defaulted: bool = False  # nothing set it: the backend's default queue

    @property
    def problem(self) -> str:
        return "; ".join(map(str, self.errors))


def _settings(pcs: PodCliqueSet, key: str) -> Iterator[tuple[str, str]]:
    """Each (field, value) that sets ``key``: the PodCliqueSet's labels, its annotations, then
    each clique template's."""
    meta = pcs.metadata
    places = [("metadata", meta.labels, meta.annotations)]
    for i, clique in enumerate(pcs.spec.template.cliques):
        places.append((f"spec.template.cliques[{i}]", clique.labels, clique.annotations))
    for prefix, labelled, annotated in places:
        for where, values in (("labels", labelled), ("annotations", annotated)):
            if value := values.get(key, "").strip():
                yield f"{prefix}.{where}[{key}]", value


def resolve_queue(pcs: PodCliqueSet, key: str, *, default: str | None, missing: str) -> Queue:
    """The queue ``key`` names on ``pcs``; ``default`` when nothing sets it (``missing`` is
    the reason given when there is no default either)."""
    queue: str | None = None
    source = f"metadata.labels[{key}]"
    errors: list[FieldError] = []
    for field, value in _settings(pcs, key):
        if not is_dns_subdomain(value):
            reason = f'"{value}" is not a queue name (a DNS-1123 subdomain)'
            errors.append(FieldError(field=field, reason=reason))
        elif queue is None:
            queue, source = value, field
        elif value != queue:
            reason = f'queue "{value}" contradicts queue "{queue}" set in {source}'
            errors.append(FieldError(field=field, reason=reason))
    defaulted = queue is None and not errors
    if defaulted:
        if default is None:
            errors.append(FieldError(field=source, reason=missing))
        queue = default
    return Queue(name=None if errors else queue, field=source, errors=errors, defaulted=defaulted)
