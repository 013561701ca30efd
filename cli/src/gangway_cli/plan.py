"""``gangway plan FILE``: the PodGangs (and pods) a PodCliqueSet produces, offline."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import msgspec

from gangway_cli.manifests import read_documents, validation_error
from gangway_cli.output import print_errors, print_yaml
from gangway_contracts.codec import from_object
from gangway_contracts.config import SchedulerConfig, load_operator_config, parse_scheduler_config
from gangway_contracts.errors import FieldErrors
from gangway_contracts.grove import ClusterTopologyBinding, PodCliqueSet
from gangway_podgang.manifests import pod_manifest, podgang_manifest
from gangway_podgang.plan import plan_podgangs


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    plan = subparsers.add_parser(
        "plan", help="print the PodGangs (and pods) a PodCliqueSet manifest produces"
    )
    plan.add_argument(
        "file",
        type=Path,
        help="a PodCliqueSet manifest; a ClusterTopologyBinding may sit beside it",
    )
    plan.add_argument("--pods", action="store_true", help="print the Pod manifests too")
    plan.add_argument("--config", type=Path, help="operator configuration (default backend)")
    plan.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        docs = read_documents(args.file)
        config = (
            load_operator_config(args.config.read_text())
            if args.config
            else parse_scheduler_config(None)
        )
        pcs_docs = [d for d in docs if d.get("kind") == "PodCliqueSet"]
        if len(pcs_docs) != 1:
            return print_errors([f"{args.file}: expected one PodCliqueSet, found {len(pcs_docs)}"])
        pcs = from_object(pcs_docs[0], PodCliqueSet)
        bindings = [
            from_object(d, ClusterTopologyBinding)
            for d in docs
            if d.get("kind") == "ClusterTopologyBinding"
        ]
        return _print_plan(pcs, config, bindings, args.pods)
    except FieldErrors as exc:
        return print_errors(exc.errors)
    except msgspec.ValidationError as exc:
        return print_errors([validation_error(exc)])
    except OSError as exc:
        return print_errors([f"{exc.filename}: {exc.strerror}"])


def _print_plan(
    pcs: PodCliqueSet, config: SchedulerConfig, bindings: list[ClusterTopologyBinding], pods: bool
) -> int:
    topology = pcs.spec.template.topology_constraint
    wanted = topology.topology_name if topology else None
    binding = next((b for b in bindings if b.metadata.name == wanted or wanted is None), None)
    backend = config.backend_for(pcs)
    plan = plan_podgangs(pcs, binding)
    documents: list[dict[str, Any]] = []
    for gang in plan.gangs:
        documents.append(podgang_manifest(gang, pcs, backend, pod_references=True))
        if pods:
            documents.extend(
                pod_manifest(gang, group, index, pcs, podgang_uid="")
                for group, index, _ in gang.pods
            )
    print_yaml(*documents)
    # Not an error: the gangs are still created, without the constraint, and the
    # PodCliqueSet gets a condition saying so.
    print_errors(f"warning: {u.field}: {u.reason}" for u in plan.unresolved_topology)
    return 0
