"""Gangway's services as separate local processes, the way each runs in its own pod."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Final

from gangway_localcluster import processes

# (name, module) of every service that exists so far, in start order.
SERVICES: Final = (("watcher", "gangway_watcher"),)


@dataclass(kw_only=True)
class LocalServices(processes.Supervised):
    ports: dict[str, int]

    @classmethod
    def start(cls, workdir: Path, settings: Mapping[str, str]) -> LocalServices:
        """Start every service with ``settings`` (GANGWAY_* variables) and wait until each
        says it is ready on /readyz."""
        started = cls(workdir=workdir, ports={}, _owns_workdir=False)
        try:
            for name, module in SERVICES:
                port = processes.free_port()
                env = {
                    **os.environ,
                    **settings,
                    "GANGWAY_HTTP_HOST": "127.0.0.1",
                    "GANGWAY_HTTP_PORT": str(port),
                }
                child = processes.start(
                    name, [sys.executable, "-m", module], workdir / f"{name}.log", env
                )
                started._children.append(child)
                ready = partial(processes.http_ok, f"http://127.0.0.1:{port}/readyz")
                processes.wait_until(ready, child, "/readyz", 60)
                started.ports[name] = port
        except BaseException:
            started.stop()
            raise
        return started
