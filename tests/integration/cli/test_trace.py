"""``gangway trace`` reads a workload's journal back from a real JetStream: only that
workload's entries, in order, and prints them with the trace id."""

from __future__ import annotations

import asyncio
import datetime
import os
import sys
from typing import Any

import nats
from nats.aio.client import Client as NatsClient

from gangway_contracts import events as ev
from gangway_contracts.codec import to_json
from gangway_contracts.k8s import NamespacedName
from gangway_contracts.permissions import PODGANG
from gangway_contracts.subjects import Subjects
from gangway_localcluster.nats import NatsServer
from gangway_runtime import journal
from gangway_runtime.settings import StreamSettings
from gangway_runtime.streams import ensure_streams

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


async def _append(nc: NatsClient, subjects: Subjects, name: str, gangs: int) -> None:
    js = nc.jetstream()
    await ensure_streams(js, subjects, StreamSettings(storage="memory"))
    start = datetime.datetime.now(datetime.UTC)
    workload = NamespacedName(namespace="ml", name=name)
    common: dict[str, Any] = {"workload": workload, "service": "gangway-podgang", "trace_id": TRACE}
    await journal.append(
        js, subjects, ev.PodCliqueSetObserved(**common, at=start, generation=1), PODGANG
    )
    for i in range(gangs):
        lifted = start + datetime.timedelta(seconds=1 + i)
        event = ev.GatesLifted(**common, at=lifted, podgang=f"{name}-{i}", pods=["a"])
        await journal.append(js, subjects, event, PODGANG)


async def test_reads_one_workloads_journal_in_order(nc: NatsClient, subjects: Subjects) -> None:
    await _append(nc, subjects, "demo", gangs=600)  # more than one fetch
    await _append(nc, subjects, "other", gangs=3)
    read = await journal.read(nc.jetstream(), subjects, "ml", "demo")
    assert len(read) == 601
    assert isinstance(read[0], ev.PodCliqueSetObserved)
    assert [e.podgang for e in read[1:] if isinstance(e, ev.GatesLifted)] == [
        f"demo-{i}" for i in range(600)
    ]
    assert await journal.read(nc.jetstream(), subjects, "ml", "missing") == []


async def test_each_entry_names_the_writer_its_subject_names(
    nc: NatsClient, subjects: Subjects
) -> None:
    """NATS lets a user publish only under its own name: the subject says who wrote an
    entry, whatever its body claims; an entry from before subjects named writers keeps its
    body's word."""
    js = nc.jetstream()
    await ensure_streams(js, subjects, StreamSettings(storage="memory"))
    workload = NamespacedName(namespace="ml", name="demo")
    at = datetime.datetime.now(datetime.UTC)
    claims = ev.BackendSynced(
        workload=workload, at=at, service="gangway-backend-kai", podgang="demo-0", backend="kai"
    )
    await journal.append(js, subjects, claims, "backend-volcano")
    older = subjects.journal("ml", "demo", "GatesLifted", "demo-0", writer="x").rsplit(".", 1)[0]
    lifted = ev.GatesLifted(
        workload=workload, at=at, service="gangway-podgang", podgang="demo-0", pods=[]
    )
    await js.publish(older, to_json(lifted))
    read = await journal.read(js, subjects, "ml", "demo")
    assert [(type(e).__name__, e.service) for e in read] == [
        ("BackendSynced", f"{subjects.prefix}-backend-volcano"),
        ("GatesLifted", "gangway-podgang"),
    ]


async def test_the_command_prints_the_timeline_and_trace_id(
    nc: NatsClient, subjects: Subjects, nats_url: str
) -> None:
    await _append(nc, subjects, "demo", gangs=2)
    code, text, err = await _trace(f"--prefix={subjects.prefix}", env={"NATS_URL": nats_url})
    assert code == 0, err
    assert f"trace id: {TRACE}" in text
    assert "PodCliqueSetObserved" in text
    assert "demo-1" in text


async def _trace(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gangway_cli.main",
        "trace",
        "ml/demo",
        *args,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    return process.returncode or 0, out.decode(), err.decode()


async def test_the_command_takes_the_services_credentials(subjects: Subjects) -> None:
    """A NATS that wants a user (as deploy/ runs it): the password from the environment as
    the services take it, never from the command line; without it, one line and exit 1."""
    config = 'authorization { users = [{user: "reader", password: "s3cret"}] }\n'
    with NatsServer.start(config=config) as server:
        nc = await nats.connect(server.url, user="reader", password="s3cret")
        try:
            await _append(nc, subjects, "demo", gangs=1)
        finally:
            await nc.close()
        args = (f"--nats-url={server.url}", "--nats-user=reader", f"--prefix={subjects.prefix}")
        code, out, _ = await _trace(*args, env={"GANGWAY_NATS_PASSWORD": "s3cret"})
        assert code == 0
        assert f"trace id: {TRACE}" in out
        code, _, err = await _trace(*args, env={"GANGWAY_NATS_PASSWORD": "wrong"})
    assert code == 1
    [line] = err.splitlines()
    assert line.startswith(f"NATS at {server.url}: ")
    assert "s3cret" not in err
