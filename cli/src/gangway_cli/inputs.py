"""What the offline subcommands read: the operator configuration, and a manifest stream of
PodCliqueSets, PodGangs and ClusterTopologyBindings."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import msgspec

from gangway_admission.checks import check_podcliqueset
from gangway_cli.manifests import read_documents
from gangway_contracts.builtin import builtin_backends
from gangway_contracts.codec import from_object
from gangway_contracts.config import (
    DEFAULT_SCHEDULER,
    SchedulerConfig,
    load_operator_config,
    parse_scheduler_config,
)
from gangway_contracts.errors import FieldError, FieldErrors, validation_error
from gangway_contracts.grove import ClusterTopologyBinding, PodCliqueSet, PodGang
from gangway_contracts.strict import unknown_fields
from gangway_podgang.plan import Plan, plan_podgangs


def config_file(value: str) -> Path:
    """``--config``'s type: a file that is there, or the command line is wrong (exit 2,
    argparse's one line) rather than a traceback when it is read."""
    path = Path(value)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{value}: no such file")
    return path


def read_config(path: Path | None) -> SchedulerConfig:
    """The operator configuration; none given: default-scheduler alone."""
    return load_operator_config(path.read_text()) if path else parse_scheduler_config(None)


def scheduler_section(others: Iterable[str], *, gang_scheduling: bool) -> dict[str, Any]:
    """A scheduler section: default-scheduler as the default (gang scheduling through the
    Workload API, or not), then ``others`` with their defaults."""
    default = {
        "name": DEFAULT_SCHEDULER,
        "default": True,
        "config": {"gangScheduling": gang_scheduling},
    }
    return {"profiles": [default, *({"name": name} for name in sorted(others))]}


def every_builtin_backend() -> dict[str, Any]:
    """The scheduler section the offline commands take when given none: they have no cluster
    to ask what runs, so every built-in backend with its defaults, and the default scheduler
    gang scheduling through the Workload API (served from Kubernetes 1.35)."""
    others = [name for name in builtin_backends() if name != DEFAULT_SCHEDULER]
    return scheduler_section(others, gang_scheduling=True)


def read_offline_config(path: Path | None) -> SchedulerConfig:
    """The configuration ``validate``, ``plan`` and ``render`` judge by: the one given, else
    every built-in backend (:func:`every_builtin_backend`) and Kueue in front of them."""
    if path:
        return read_config(path)
    return replace(parse_scheduler_config(every_builtin_backend()), kueue=True)


OFFLINE_CONFIG_HELP: Final = (
    "operator configuration (scheduler profiles); default: every built-in backend, "
    "default-scheduler with gang scheduling"
)


DEFAULT_NAMESPACE: Final = "default"


@dataclass(frozen=True)
class Manifests:
    podcliquesets: list[PodCliqueSet]
    podgangs: list[tuple[PodGang, dict[str, Any]]]  # decoded, and as written
    bindings: list[ClusterTopologyBinding]

    @classmethod
    def read(cls, path: Path) -> Manifests:
        """Decode by kind; FieldErrors name the field of a bad one, and every field a
        PodCliqueSet writes that the API server would refuse as unknown."""
        return cls.from_documents(read_documents(path))

    @classmethod
    def from_documents(cls, docs: list[dict[str, Any]]) -> Manifests:
        """:meth:`read`, of documents already read."""
        unknown = [
            error
            for doc in docs
            if doc.get("kind") == "PodCliqueSet"
            for error in unknown_fields(doc, PodCliqueSet)
        ]
        try:
            found = cls._decode(docs)
        except msgspec.ValidationError as exc:
            raise FieldErrors([*unknown, validation_error(exc)]) from None
        if unknown:
            raise FieldErrors(unknown)
        return found

    @classmethod
    def _decode(cls, docs: list[dict[str, Any]]) -> Manifests:
        for doc in docs:
            if doc.get("kind") in ("PodCliqueSet", "PodGang"):
                # Where `kubectl apply` puts it with a context of no namespace: pods'
                # addresses (GROVE_HEADLESS_SERVICE) name it.
                meta = doc.get("metadata")
                if isinstance(meta, dict) and not meta.get("namespace"):
                    meta["namespace"] = DEFAULT_NAMESPACE
        return cls(
            podcliquesets=[
                from_object(d, PodCliqueSet) for d in docs if d.get("kind") == "PodCliqueSet"
            ],
            podgangs=[(from_object(d, PodGang), d) for d in docs if d.get("kind") == "PodGang"],
            bindings=[
                from_object(d, ClusterTopologyBinding)
                for d in docs
                if d.get("kind") == "ClusterTopologyBinding"
            ],
        )

    def only_podcliqueset(self, path: Path) -> PodCliqueSet:
        """The one PodCliqueSet a subcommand works on; FieldErrors if there is not exactly one."""
        if len(self.podcliquesets) != 1:
            found = len(self.podcliquesets)
            reason = f"{path}: expected one PodCliqueSet, found {found}"
            raise FieldErrors([FieldError(field="", reason=reason)])
        return self.podcliquesets[0]

    def some_podcliquesets(self, path: Path) -> list[PodCliqueSet]:
        """Every PodCliqueSet of the file; FieldErrors if there is none."""
        if not self.podcliquesets:
            reason = f"{path}: expected a PodCliqueSet, found none"
            raise FieldErrors([FieldError(field="", reason=reason)])
        return self.podcliquesets

    def binding_for(self, pcs: PodCliqueSet) -> ClusterTopologyBinding | None:
        """The ClusterTopologyBinding the PodCliqueSet names (any, if it names none)."""
        wanted = pcs.topology_name
        return next((b for b in self.bindings if wanted is None or b.metadata.name == wanted), None)

    def levels_for(self, pcs: PodCliqueSet) -> list[str] | None:
        """The topology levels of its binding, broadest first; None: no binding here
        (admission's checks then read Grove's domains)."""
        binding = self.binding_for(pcs)
        return [level.domain for level in binding.spec.levels] if binding else None

    def plan(self, pcs: PodCliqueSet) -> Plan:
        """The PodGangs and pods of ``pcs``; FieldErrors when admission would refuse it (the
        same structural checks the webhook and ``gangway validate`` run): ``plan`` and
        ``render`` answer only for what the cluster takes."""
        if errors := check_podcliqueset(pcs, self.levels_for(pcs)).errors:
            raise FieldErrors(errors)
        return plan_podgangs(pcs, self.binding_for(pcs))
