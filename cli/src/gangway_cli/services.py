"""Gangway's services as separate local processes, the way each runs in its own pod."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from gangway_contracts import kueue
from gangway_contracts.builtin import builtin_backends
from gangway_contracts.config import (
    SchedulerConfig,
)
from gangway_localcluster import processes


def services_for(config: SchedulerConfig) -> list[tuple[str, str]]:
    """(name, module) of every service to run for a configuration, in start order: the
    watcher first (everyone reads its mirror), the podgang service, one backend per
    enabled profile, the Kueue stage when enabled, then admission (it asks the backends)."""
    found = [("watcher", "gangway_watcher"), ("podgang", "gangway_podgang")]
    table = builtin_backends()  # an external backend is its vendor's to run
    found += [(f"backend-{name}", table[name].service) for name in config.enabled if name in table]
    if config.kueue:
        found.append((kueue.STAGE, "gangway_stage_kueue"))
    found.append(("admission", "gangway_admission"))
    return found


@dataclass(kw_only=True)
class LocalServices(processes.Supervised):
    ports: dict[str, int]
    settings: Mapping[str, str] = field(default_factory=dict)
    own_settings: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # How each was started: (module, settings_of, command), to start it again.
    started: dict[str, tuple[str, str, Sequence[str]]] = field(default_factory=dict)

    @classmethod
    def start(
        cls,
        workdir: Path,
        settings: Mapping[str, str],
        services: list[tuple[str, str]],
        own_settings: Mapping[str, Mapping[str, str]] | None = None,
    ) -> LocalServices:
        """Start every service with ``settings`` (GANGWAY_* variables) plus its
        ``own_settings``, and wait until each says it is ready on /readyz."""
        started = cls(
            workdir=workdir,
            ports={},
            settings=settings,
            own_settings=own_settings or {},
            _owns_workdir=False,
        )
        try:
            for name, module in services:
                started.add(name, module)
        except BaseException:
            started.stop()
            raise
        return started

    def add(
        self, name: str, module: str, settings_of: str = "", command: Sequence[str] = ()
    ) -> None:
        """Start one more process, ``name``, running ``module`` (or ``command``: a
        third-party backend as its vendor runs it) with the own settings of ``settings_of``
        (a replica: "podgang-2" with podgang's), and wait until it is ready."""
        port = processes.free_port()
        env = {
            **os.environ,
            **self.settings,
            **self.own_settings.get(settings_of or name, {}),
            "GANGWAY_HTTP_HOST": "127.0.0.1",
            "GANGWAY_HTTP_PORT": str(port),
            # One process of this name runs at a time: started again after a crash, it takes
            # its predecessor's key leases back at once (gangway_runtime.leases).
            "GANGWAY_LEASE_HOLDER": f"{socket.gethostname()}/{name}",
        }
        log = self.workdir / f"{name}.log"
        argv = list(command) or [sys.executable, "-m", module]
        child = processes.start(name, argv, log, env)
        self._children.append(child)
        ready = partial(processes.http_ok, f"http://127.0.0.1:{port}/readyz")
        processes.wait_until(ready, child, "/readyz", 60)
        self.ports[name] = port
        self.started[name] = (module, settings_of, command)

    def restart(self, name: str) -> None:
        """SIGKILL one service and start it again as it was started; ready on return."""
        self.kill(name)
        self.start_again(name)

    def start_again(self, name: str) -> None:
        """Start a service that was killed, as it was started; ready on return."""
        module, settings_of, command = self.started[name]
        self.add(name, module, settings_of, command)

    def kill(self, name: str) -> None:
        """SIGKILL one service, as a crash or an OOM kill would end it: no clean-up at all."""
        self.kill_child(name)
        del self.ports[name]
