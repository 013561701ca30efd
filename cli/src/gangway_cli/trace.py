"""``gangway trace NAMESPACE/NAME``: a PodCliqueSet's timeline from the journal (which
service did what, when, how long each step took) and its OpenTelemetry trace id.

The journal lives on the bus, so this needs NATS, not the API server: ``--nats-url``, else
``$NATS_URL`` (what ``gangway up`` prints), else the local default. Credentials as the
services take them: ``--nats-creds``, ``--nats-user`` with the password in
``$GANGWAY_NATS_PASSWORD`` (never on a command line), ``--nats-ca``; each also from its
``GANGWAY_NATS_*`` variable.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

import nats

from gangway_cli.arguments import add_workload
from gangway_cli.timeline import render
from gangway_contracts.errors import FieldErrors
from gangway_contracts.events import AnyJournalEvent
from gangway_contracts.subjects import DEFAULT_PREFIX, Subjects
from gangway_runtime import bus, journal
from gangway_runtime.settings import ServiceSettings, from_environment


def default_nats_url() -> str:
    return os.environ.get("NATS_URL") or os.environ.get("GANGWAY_NATS_URL", "nats://127.0.0.1:4222")


def add_arguments(trace: argparse.ArgumentParser) -> None:
    add_workload(trace)
    trace.add_argument("--nats-url", default=None, help="default: $NATS_URL or local")
    trace.add_argument("--nats-creds", default=None, help="a .creds file (JWT and seed)")
    trace.add_argument(
        "--nats-user", default=None, help="user; the password from $GANGWAY_NATS_PASSWORD"
    )
    trace.add_argument("--nats-ca", default=None, help="CA bundle for a TLS server")
    trace.add_argument("--prefix", default=DEFAULT_PREFIX, help="subject prefix")
    trace.add_argument(
        "--all", dest="full", action="store_true", default=None, help="every entry, however many"
    )
    trace.set_defaults(run=run)


async def read_journal(
    settings: ServiceSettings, subjects: Subjects, namespace: str, name: str
) -> list[AnyJournalEvent]:
    nc = await nats.connect(
        **bus.credentials(settings),
        servers=settings.nats_servers,
        name="gangway-cli",
        allow_reconnect=False,
        connect_timeout=5,
        max_reconnect_attempts=1,  # one try: by default the first connect retries for 2 min
        error_cb=_quiet,  # the failure is raised to run(), which says it in one line
    )
    try:
        return await journal.read(nc.jetstream(), subjects, namespace, name)
    finally:
        await nc.close()


async def _quiet(error: Exception) -> None:
    """nats-py's default logs every failed connect with its traceback."""


def run(args: argparse.Namespace) -> int:
    namespace, name = args.workload
    url = args.nats_url or default_nats_url()
    given = {"nats_creds": args.nats_creds, "nats_user": args.nats_user, "nats_ca": args.nats_ca}
    try:
        options = {key: value for key, value in given.items() if value is not None}
        # The password only from GANGWAY_NATS_PASSWORD, as the services take it.
        settings = from_environment(ServiceSettings, given={"nats_url": url, **options})
    except FieldErrors as exc:
        for error in exc.errors:
            print(f"--{error.field.replace('_', '-')}: {error.reason}", file=sys.stderr)
        return 2
    try:
        events = asyncio.run(read_journal(settings, Subjects(args.prefix), namespace, name))
    except (OSError, TimeoutError, nats.errors.Error) as exc:
        print(f"NATS at {url}: {exc or type(exc).__name__}", file=sys.stderr)
        return 1
    for line in render(args.workload, events, args.full):
        print(line)
    return 0 if events else 1
