"""``gangway validate --config CONFIG FILE [--old OLDFILE]``: admission's checks, offline.

The same function the webhook runs, with the built-in backends asked in-process. What needs
the cluster (an external backend's own checks, KAI's queue) is skipped and named on stderr.
Every PodCliqueSet of the file (``-``: standard input) is checked; with more than one, each
line says which. Errors one per line on stderr, exit 1 if any is rejected; exit 0 when all
are admitted.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from gangway_admission.verdict import AskBackend, Policy, evaluate
from gangway_cli.backends import builtin_backend
from gangway_cli.inputs import OFFLINE_CONFIG_HELP, Manifests, config_file, read_offline_config
from gangway_cli.output import print_errors
from gangway_contracts.builtin import builtin_backends
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.errors import FieldErrors
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.rpc import ValidateReply, ValidateRequest


def add_arguments(validate: argparse.ArgumentParser) -> None:
    validate.add_argument(
        "file",
        type=Path,
        help="PodCliqueSet manifests (- for stdin); a ClusterTopologyBinding may sit beside them",
    )
    validate.add_argument("--config", type=config_file, help=OFFLINE_CONFIG_HELP)
    validate.add_argument("--old", type=Path, help="the version it replaces: check it as an update")
    validate.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        config = read_offline_config(args.config)
        manifests = Manifests.read(args.file)
        if args.old:  # an update: of one PodCliqueSet
            pcs = manifests.only_podcliqueset(args.file)
            old = Manifests.read(args.old).only_podcliqueset(args.old)
            return _validate(args.file, config, manifests, pcs, old=old)
        found = manifests.some_podcliquesets(args.file)
    except FieldErrors as exc:
        return print_errors(exc.errors)
    many = len(found) > 1
    codes = [
        _validate(args.file, config, manifests, pcs, which=f"{_name(pcs)}: " if many else "")
        for pcs in found
    ]
    return max(codes)


def _name(pcs: PodCliqueSet) -> str:
    return f"{pcs.metadata.namespace or '(no namespace)'}/{pcs.metadata.name}"


def _validate(
    file: Path,
    config: SchedulerConfig,
    manifests: Manifests,
    pcs: PodCliqueSet,
    *,
    old: PodCliqueSet | None = None,
    which: str = "",
) -> int:
    """One PodCliqueSet's verdict: notes and errors on stderr (each after ``which``), the
    admission on stdout; 1 if refused."""
    notes = []
    levels = manifests.levels_for(pcs)
    if levels is None and pcs.topology_name:
        notes.append(
            f'skipped: ClusterTopologyBinding "{pcs.topology_name}" is not in {file}: '
            "topology levels read as Grove's domains"
        )
    request = ValidateRequest(operation="UPDATE" if old else "CREATE", podcliqueset=pcs, old=old)
    verdict = asyncio.run(
        evaluate(
            request,
            config,
            _in_process(config),
            levels,
            Policy(unreachable=frozenset(set(config.enabled) - set(builtin_backends()))),
        )
    )
    notes += [f"skipped: {s}" for s in verdict.skipped]
    notes += [f"warning: {w}" for w in verdict.warnings]
    if not verdict.allowed:
        return print_errors(f"{which}{line}" for line in [*verdict.errors, *notes])
    print_errors(f"{which}{note}" for note in notes)
    print(f"admitted: {_name(pcs)} → {verdict.backend}")
    return 0


def _in_process(config: SchedulerConfig) -> AskBackend:
    """Built-in backends asked in-process, with no cluster: their offline checks."""

    async def ask(backend: str, request: ValidateRequest) -> ValidateReply:
        return await builtin_backend(backend, config).validate_podcliqueset(request, None)

    return ask
