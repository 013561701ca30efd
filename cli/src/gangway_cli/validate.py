"""``gangway validate --config CONFIG FILE [--old OLDFILE]``: admission's checks, offline.

The same function the webhook runs, with the built-in backends asked in-process. What needs
the cluster (an external backend's own checks, KAI's queue) is skipped and named on stderr.
Errors one per line on stderr, exit 1 on rejection; exit 0 when admitted.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from gangway_admission.verdict import AskBackend, Policy, evaluate
from gangway_cli.backends import BUILTIN_BACKENDS, builtin_backend
from gangway_cli.inputs import Manifests, read_config
from gangway_cli.output import print_errors
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.errors import FieldErrors
from gangway_contracts.rpc import ValidateReply, ValidateRequest


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    validate = subparsers.add_parser(
        "validate", help="run admission's checks on a PodCliqueSet manifest, offline"
    )
    validate.add_argument(
        "file",
        type=Path,
        help="a PodCliqueSet manifest; a ClusterTopologyBinding may sit beside it",
    )
    validate.add_argument("--config", type=Path, help="operator configuration (scheduler profiles)")
    validate.add_argument("--old", type=Path, help="the version it replaces: check it as an update")
    validate.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        config = read_config(args.config)
        manifests = Manifests.read(args.file)
        pcs = manifests.only_podcliqueset(args.file)
        old = Manifests.read(args.old).only_podcliqueset(args.old) if args.old else None
    except FieldErrors as exc:
        return print_errors(exc.errors)
    notes = []
    binding = manifests.binding_for(pcs)
    levels = [level.domain for level in binding.spec.levels] if binding else None
    if binding is None and pcs.topology_name:
        notes.append(
            f'skipped: ClusterTopologyBinding "{pcs.topology_name}" is not in {args.file}: '
            "topology levels read as Grove's domains"
        )
    request = ValidateRequest(operation="UPDATE" if old else "CREATE", podcliqueset=pcs, old=old)
    verdict = asyncio.run(
        evaluate(
            request,
            config,
            _in_process(config),
            levels,
            Policy(unreachable=frozenset(set(config.enabled) - set(BUILTIN_BACKENDS))),
        )
    )
    notes += [f"skipped: {s}" for s in verdict.skipped]
    notes += [f"warning: {w}" for w in verdict.warnings]
    if not verdict.allowed:
        return print_errors([*verdict.errors, *notes])
    print_errors(notes)
    meta = pcs.metadata
    print(f"admitted: {meta.namespace or '(no namespace)'}/{meta.name} → {verdict.backend}")
    return 0


def _in_process(config: SchedulerConfig) -> AskBackend:
    """Built-in backends asked in-process, with no cluster: their offline checks."""

    async def ask(backend: str, request: ValidateRequest) -> ValidateReply:
        return await builtin_backend(backend, config).validate_podcliqueset(request, None)

    return ask
