"""``gangway up`` (the README's first command) brings up a working system and takes it down."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import nats

from gangway_contracts.subjects import Kind, Subjects
from gangway_runtime.kube import api_client
from tests.integration.watcher.conftest import podcliqueset
from tests.support.kube import server_side_apply
from tests.support.store import eventually, holds, stored


async def test_up_mirrors_the_cluster_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    ready = tmp_path / "ready.env"
    gangway = Path(sys.executable).parent / "gangway"
    proc = await asyncio.create_subprocess_exec(
        gangway,
        "up",
        "--ready-file",
        str(ready),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ},
    )
    try:

        async def up() -> bool:
            return ready.exists() or proc.returncode is not None

        await eventually(up, bool, within=300)
        assert proc.returncode is None
        env = dict(line.split("=", 1) for line in ready.read_text().splitlines())
        async with await api_client(Path(env["KUBECONFIG"])) as api:
            ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}
            await server_side_apply(api, ns, "")
            await server_side_apply(api, podcliqueset("demo", "trainer"), "demo")
        nc = await nats.connect(env["NATS_URL"])
        try:
            js = nc.jetstream()
            found = await eventually(
                lambda: stored(js, Subjects(), Kind.PODCLIQUESET), holds(("demo", "trainer"))
            )
            assert not found[("demo", "trainer")].deleted
        finally:
            await nc.close()
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        output, _ = await asyncio.wait_for(proc.communicate(), 60)
    text = output.decode()
    assert await proc.wait() == 0, text
    assert "watcher: http://127.0.0.1:" in text
    assert "stopping" in text
