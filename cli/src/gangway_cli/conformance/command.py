"""The command: arguments, the cluster (one local one for every scenario, or an existing
one), the report, the exit."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Final

from gangway_cli.conformance.report import FORMATS, Result, Status, show
from gangway_cli.conformance.room import FoundRoom, LocalRoom, Room
from gangway_cli.conformance.scenarios import SCENARIOS, promise
from gangway_cli.conformance.stage import Declined, Stage
from gangway_cli.inputs import config_file, read_offline_config
from gangway_cli.output import print_errors
from gangway_cli.scratch import scratch_gangway
from gangway_cli.services import LocalServices
from gangway_cli.up import LocalCluster
from gangway_cli.whatif import say
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.errors import FieldErrors
from gangway_contracts.permissions import backend_user
from gangway_contracts.resources import backend_resources
from gangway_localcluster.controlplane import LOCAL_SCHEDULERS, CappedQueue
from gangway_localcluster.kai import DEFAULT_QUEUE as KAI_DEFAULT_QUEUE
from gangway_runtime.apiclient import api_client
from gangway_runtime.kube import Kube, KubeError
from gangway_runtime.status import PODCLIQUESETS

EXIT_FAILED: Final = 3
# What a PodCliqueSet needs to be taken by a backend, beyond its scheduler name: KAI has no
# default queue (the local cluster makes this one).
WORKLOAD_LABELS: Final = {"kai-scheduler": {"kai.scheduler/queue": KAI_DEFAULT_QUEUE}}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", required=True, help="the backend (profile name) to prove")
    parser.add_argument(
        "--config",
        type=config_file,
        help="operator configuration to run Gangway with (it names the backend; a "
        "third-party one with external: true); default: the backend with its defaults "
        "beside default-scheduler",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--local",
        action="store_true",
        help="on a local control plane with kwok nodes and Gangway started here (the default)",
    )
    where.add_argument(
        "--kubeconfig",
        type=Path,
        help="on this existing cluster, where Gangway runs with the backend: its nodes as "
        "found (labelled gangway.dev/conformance-pool while a scenario uses them), "
        "namespaces conformance-<scenario>",
    )
    parser.add_argument(
        "--workload-label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a label every workload carries (a queue the backend needs); repeatable",
    )
    parser.add_argument(
        "--backend-command",
        help="how to run a third-party backend (external: true), e.g. "
        "'python -m my_backend': started with the environment a backend runs with",
    )
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
    kube: Kube,
    room: Room,
    config: SchedulerConfig,
    names: list[str],
    args: argparse.Namespace,
    *,
    restart_backend: Callable[[], Awaitable[None]] | None = None,
    capped_queue: Callable[[str, int], CappedQueue] | None = None,
) -> list[Result]:
    backend = args.backend
    # What the backend makes per gang (not what it only reads, as Volcano's Queues).
    own = [r for r in backend_resources(config) if r.backend == backend and r.namespaced]
    results = []
    for name in names:
        stage = Stage(
            kube=kube,
            room=room,
            scenario=name,
            scheduler_name=config.profiles[backend].scheduler_name,
            workload_labels=workload_labels(args),
            own=own,
            timeout=args.timeout,
            settle=args.settle,
            restart_backend=restart_backend,
            capped_queue=capped_queue,
        )
        say(f"{name}: {promise(name)}")
        started = time.monotonic()
        try:
            outcome = await SCENARIOS[name](stage)
            left = await stage.clean_up()
        except Declined as declined:
            await stage.clean_up()
            result = Result(name, "skip", str(declined), time.monotonic() - started)
        except (KubeError, OSError, RuntimeError, TimeoutError) as exc:
            result = Result(name, "error", f"could not run: {exc}", time.monotonic() - started)
        else:
            status: Status = "pass" if outcome.passed else "fail"
            evidence = outcome.evidence + (f"; left after: {', '.join(left)}" if left else "")
            result = Result(name, status, evidence, time.monotonic() - started)
        finally:
            await room.release()
        say(f"  {result.status}: {result.evidence}")
        results.append(result)
    return results


def workload_labels(args: argparse.Namespace) -> dict[str, str]:
    """--workload-label's, over what the local cluster's backend needs (KAI's queue)."""
    given = dict(label.split("=", 1) for label in args.workload_label)
    local = {} if args.kubeconfig else WORKLOAD_LABELS.get(args.backend, {})
    return {**local, **given}


async def _on_local(
    local: LocalCluster,
    services: LocalServices,
    config: SchedulerConfig,
    names: list[str],
    args: argparse.Namespace,
) -> list[Result]:
    async def restart_backend() -> None:
        await asyncio.to_thread(services.restart, backend_user(args.backend))

    async with Kube(await api_client(local.cp.kubeconfig)) as kube:
        scheduler = LOCAL_SCHEDULERS.get(args.backend)
        return await _run_all(
            kube,
            LocalRoom(local),
            config,
            names,
            args,
            restart_backend=restart_backend,
            capped_queue=scheduler.capped_queue if scheduler else None,
        )


async def _on_existing(
    config: SchedulerConfig, names: list[str], args: argparse.Namespace
) -> list[Result]:
    async with Kube(await api_client(args.kubeconfig)) as kube:
        if not await kube.serves(PODCLIQUESETS):
            raise RuntimeError("the cluster serves no PodCliqueSets: Gangway is not installed")
        room = FoundRoom(kube)
        say(f"found {await room.survey()}")
        return await _run_all(kube, room, config, names, args)


def conformance(
    config: SchedulerConfig, names: list[str], args: argparse.Namespace
) -> list[Result]:
    """Each scenario in turn, on the existing cluster or on a local one with the backend's
    scheduler and Gangway on it (gone on return)."""
    if args.kubeconfig:
        return asyncio.run(_on_existing(config, names, args))
    backend = args.backend
    command = shlex.split(args.backend_command) if args.backend_command else []
    with ExitStack() as stack:
        local, config, services = scratch_gangway(
            stack,
            "gangway-conformance-",
            [backend],
            say,
            given=args.config,
            commands={backend: command} if command else None,
        )
        results = asyncio.run(_on_local(local, services, config, names, args))
        say("stopping…")
    return results


def run(args: argparse.Namespace) -> int:
    try:
        config = read_offline_config(args.config)
    except FieldErrors as exc:
        return print_errors(exc.errors)
    problem = _backend_problem(config, args)
    if problem:
        print(f"conformance: {problem}", file=sys.stderr)
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
        results = conformance(config, names, args)
    except (RuntimeError, TimeoutError, KubeError, OSError) as exc:
        where = "the cluster" if args.kubeconfig else "the local cluster"
        print(f"conformance: {where} could not run: {exc}", file=sys.stderr)
        return 1
    show(args.backend, results, args.output, sys.stdout)
    return 0 if all(r.status in ("pass", "skip") for r in results) else EXIT_FAILED


def _backend_problem(config: SchedulerConfig, args: argparse.Namespace) -> str:
    """What is wrong with --backend and --backend-command for ``config``, or nothing."""
    profile = config.profiles.get(args.backend)
    if profile is None:
        return f"--backend {args.backend}: not one of {', '.join(config.enabled)}"
    if profile.external and not args.backend_command and not args.kubeconfig:
        return (
            f"--backend {args.backend} is a third-party backend (external: true): "
            "give --backend-command, the command that runs it"
        )
    if args.backend_command and not profile.external:
        return f"--backend-command: {args.backend} is built in; Gangway runs it"
    if args.backend_command and args.kubeconfig:
        return "--backend-command: on an existing cluster the backend runs there already"
    if bad := [label for label in args.workload_label if "=" not in label]:
        return f"--workload-label {bad[0]}: not KEY=VALUE"
    return ""
