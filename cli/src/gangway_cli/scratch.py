"""A local cluster with Gangway on it for one command (``whatif``, ``conformance``): the
backends asked for and default-scheduler (or a configuration as given, third-party backends
run by their own commands), their real schedulers, nodes as given; gone with the caller's
ExitStack."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from tempfile import TemporaryDirectory

import yaml

from gangway_cli import cluster
from gangway_cli.inputs import scheduler_section
from gangway_cli.services import LocalServices
from gangway_cli.up import LocalCluster, local_cluster, start_gangway
from gangway_contracts.config import DEFAULT_SCHEDULER, SchedulerConfig, load_operator_config
from gangway_contracts.permissions import backend_user
from gangway_localcluster.crds import gangway_crds
from gangway_localcluster.nodes import NodePool


def scratch_gangway(
    stack: ExitStack,
    prefix: str,
    backends: Iterable[str],
    say: Callable[[str], None],
    pools: Iterable[NodePool] = (),
    *,
    given: Path | None = None,
    commands: Mapping[str, Sequence[str]] | None = None,
) -> tuple[LocalCluster, SchedulerConfig, LocalServices]:
    """Default-scheduler (gang scheduling) and ``backends``, or the operator configuration
    ``given``: only their schedulers start (kube-scheduler always does); ``commands`` run
    the third-party backends it names. RuntimeError when a scheduler is not built yet
    (``make up`` builds them)."""
    state = Path(stack.enter_context(TemporaryDirectory(prefix=prefix)))
    config_file = given or state / "operator.yaml"
    if given is None:
        others = sorted({b for b in backends if b != DEFAULT_SCHEDULER})
        config_file.write_text(
            yaml.safe_dump({"scheduler": scheduler_section(others, gang_scheduling=True)})
        )
    config = load_operator_config(config_file.read_text())
    local = local_cluster(state, None, stack, say, nodes=NodePool(count=0), given=config)
    if local.building():
        raise RuntimeError(
            f"{', '.join(local.building())} not built yet: run `make up` once to build it"
        )
    made = list(pools)
    for pool in made:
        local.cp.add_nodes(pool)
    say(f"{sum(p.count for p in made)} nodes; starting Gangway…")
    found = asyncio.run(cluster.prepare(local.cp.kubeconfig, gangway_crds()))
    running = start_gangway(
        stack,
        state=state,
        local=local,
        kubeconfig=local.cp.kubeconfig,
        found=found,
        given=config,
        config=config_file,
    )
    for backend, command in (commands or {}).items():
        say(f"starting {backend}: {' '.join(command)}")
        running.services.add(backend_user(backend), "", command=command)
    return local, config, running.services
