"""``gangway plan FILE``: the PodGangs a PodCliqueSet produces, offline; with ``--pods``
also its pods, headless Services, PodCliques and scaling groups."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gangway_cli.inputs import OFFLINE_CONFIG_HELP, Manifests, config_file, read_offline_config
from gangway_cli.output import add_output_option, print_documents, print_errors
from gangway_contracts.errors import FieldErrors
from gangway_podgang.autoscalers import autoscalers_wanted
from gangway_podgang.cliques import planned_objects
from gangway_podgang.headless import services_to_write
from gangway_podgang.manifests import pod_manifest, podgang_manifest


def add_arguments(plan: argparse.ArgumentParser) -> None:
    plan.add_argument(
        "file",
        type=Path,
        help="a PodCliqueSet manifest; a ClusterTopologyBinding may sit beside it",
    )
    plan.add_argument(
        "--pods",
        action="store_true",
        help="print the Pod manifests too (hostname, subdomain, Grove's variables, the "
        "startup-order init container), each replica's headless Services, the "
        "PodCliques and scaling groups, and their HorizontalPodAutoscalers",
    )
    plan.add_argument("--config", type=config_file, help=OFFLINE_CONFIG_HELP)
    add_output_option(plan)
    plan.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        config = read_offline_config(args.config)
        manifests = Manifests.read(args.file)
        pcs = manifests.only_podcliqueset(args.file)
        plan = manifests.plan(pcs)
        backend = config.backend_for(pcs)  # a scheduler the configuration does not enable
    except FieldErrors as exc:
        return print_errors(exc.errors)
    documents: list[dict[str, Any]] = []
    services, _ = services_to_write(pcs, plan, {})
    autoscalers = autoscalers_wanted(pcs)
    for gang in plan.gangs:
        documents.append(podgang_manifest(gang, pcs, backend, pod_references=True))
        if args.pods:
            # The replica's headless Services, written with its base gang.
            documents.extend(s.desired for s in services if s.travels_with == gang.name)
            documents.extend(planned_objects(pcs, plan, gang.name))
            if gang.is_base:  # the replica's HPAs (autoScalingConfig, scaleConfig)
                replica = f"{pcs.metadata.name}-{gang.pcs_replica}-"
                documents.extend(
                    hpa for name, hpa in autoscalers.items() if name.startswith(replica)
                )
            documents.extend(
                pod_manifest(gang, group, index, pcs, podgang_uid="")
                for group, index, _ in gang.pods
            )
    print_documents(args.output, *documents)
    # Not an error: the gangs are still created, without the constraint, and the
    # PodCliqueSet gets a condition saying so.
    print_errors(f"warning: {u.field}: {u.reason}" for u in plan.unresolved_topology)
    return 0
