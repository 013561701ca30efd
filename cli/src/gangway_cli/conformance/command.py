"""The command: arguments, one local cluster for every scenario, the report, the exit."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from contextlib import ExitStack
from typing import Final

from gangway_cli.backends import builtin_backend
from gangway_cli.conformance.report import FORMATS, Result, Status, show
from gangway_cli.conformance.scenarios import SCENARIOS, promise
from gangway_cli.conformance.stage import Declined, Stage
from gangway_cli.inputs import read_offline_config
from gangway_cli.scratch import scratch_gangway
from gangway_cli.up import LocalCluster
from gangway_cli.whatif import say
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.resources import backend_resources
from gangway_contracts.rpc import ValidateRequest
from gangway_localcluster.kai import DEFAULT_QUEUE as KAI_DEFAULT_QUEUE
from gangway_runtime.apiclient import api_client
from gangway_runtime.kube import Kube, KubeError

EXIT_FAILED: Final = 3
# What a PodCliqueSet needs to be taken by a backend, beyond its scheduler name: KAI has no
# default queue (the local cluster makes this one).
WORKLOAD_LABELS: Final = {"kai-scheduler": {"kai.scheduler/queue": KAI_DEFAULT_QUEUE}}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", required=True, help="the backend (profile name) to prove")
    parser.add_argument(
        "--scenarios",
        help=f"comma-separated, in this order by default: {', '.join(SCENARIOS)}",
    )
    parser.add_argument("--list", action="store_true", help="print each scenario's promise")
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="seconds each wait may take (120)"
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=10.0,
        help="seconds a scheduler's verdict must hold before it is taken (10)",
    )
    parser.add_argument("-o", "--output", choices=FORMATS, default="table", help="default: table")
    parser.set_defaults(run=run)


def chosen(asked: str | None) -> list[str]:
    """The scenarios to run; ValueError naming the unknown ones."""
    if not asked:
        return list(SCENARIOS)
    names = [n.strip() for n in asked.split(",") if n.strip()]
    if unknown := [n for n in names if n not in SCENARIOS]:
        raise ValueError(f"{', '.join(unknown)}: not a scenario (one of {', '.join(SCENARIOS)})")
    return names


async def _run_all(
    local: LocalCluster,
    config: SchedulerConfig,
    backend: str,
    names: list[str],
    args: argparse.Namespace,
) -> list[Result]:
    results = []
    offline = builtin_backend(backend, config)

    async def unsupported(pcs: PodCliqueSet) -> list[str]:
        """What the backend's admission declares it cannot do (offline, in-process)."""
        asked = ValidateRequest(operation="CREATE", podcliqueset=pcs)
        reply = await offline.validate_podcliqueset(asked, None)
        return [f"{u.field}: {u.feature}: {u.message}" for u in reply.unsupported]

    # What the backend makes per gang (not what it only reads, as Volcano's Queues).
    own = [r for r in backend_resources(config) if r.backend == backend and r.namespaced]
    async with Kube(await api_client(local.cp.kubeconfig)) as kube:
        for name in names:
            stage = Stage(
                kube=kube,
                local=local,
                scenario=name,
                scheduler_name=config.profiles[backend].scheduler_name,
                workload_labels=dict(WORKLOAD_LABELS.get(backend, {})),
                own=own,
                timeout=args.timeout,
                settle=args.settle,
                unsupported=unsupported,
            )
            say(f"{name}: {promise(name)}")
            started = time.monotonic()
            try:
                outcome = await SCENARIOS[name](stage)
                left = await stage.clean_up()
            except Declined as declined:
                await stage.clean_up()
                said = f"declared unsupported: {declined}"
                result = Result(name, "skip", said, time.monotonic() - started)
            except (KubeError, OSError, RuntimeError, TimeoutError) as exc:
                result = Result(name, "error", f"could not run: {exc}", time.monotonic() - started)
            else:
                status: Status = "pass" if outcome.passed else "fail"
                evidence = outcome.evidence + (f"; left after: {', '.join(left)}" if left else "")
                result = Result(name, status, evidence, time.monotonic() - started)
            say(f"  {result.status}: {result.evidence}")
            results.append(result)
    return results


def conformance(backend: str, names: list[str], args: argparse.Namespace) -> list[Result]:
    """A local cluster with the backend's scheduler, Gangway on it, each scenario in turn;
    all gone on return."""
    with ExitStack() as stack:
        local, config = scratch_gangway(stack, "gangway-conformance-", [backend], say)
        results = asyncio.run(_run_all(local, config, backend, names, args))
        say("stopping…")
    return results


def run(args: argparse.Namespace) -> int:
    enabled = read_offline_config(None).profiles
    if args.backend not in enabled:
        print(
            f"conformance: --backend {args.backend}: not one of {', '.join(enabled)}",
            file=sys.stderr,
        )
        return 2
    try:
        names = chosen(args.scenarios)
    except ValueError as exc:
        print(f"conformance: --scenarios: {exc}", file=sys.stderr)
        return 2
    if args.list:
        for name in names:
            print(f"{name}: {promise(name)}")
        return 0
    try:
        results = conformance(args.backend, names, args)
    except (RuntimeError, TimeoutError, KubeError, OSError) as exc:
        print(f"conformance: the local cluster could not run: {exc}", file=sys.stderr)
        return 1
    show(args.backend, results, args.output, sys.stdout)
    return 0 if all(r.status in ("pass", "skip") for r in results) else EXIT_FAILED
