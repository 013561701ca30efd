"""``gangway up``'s NATS, run the way deploy/ runs it: a user per service with its
permissions (``gangway_contracts.permissions``), the streams and durable consumers made by
the setup user before any service starts, JetStream on file in up's working directory, and
TLS when asked for.

Passwords are fresh random ones each start, handed to each service in its environment and
never printed. A client that gives no credentials (``gangway trace``, ``kubectl``'s
neighbour in another shell) is the viewer: it reads the journal, objects and dead letters,
and can change nothing.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import SecretStr

from gangway_contracts.config import SchedulerConfig
from gangway_contracts.durables import durables
from gangway_contracts.permissions import (
    SETUP,
    VIEWER,
    nats_authorization,
    service_permissions,
)
from gangway_localcluster.certs import write_serving_certificate
from gangway_localcluster.nats import NatsServer
from gangway_runtime.settings import ConsumerSettings, ServiceSettings
from gangway_runtime.streams import set_up

_HOST = "127.0.0.1"
Settings = TypeVar("Settings", bound=ServiceSettings)


@dataclass(frozen=True)
class LocalBus:
    server: NatsServer
    passwords: dict[str, str]
    ca: Path | None  # the CA a client trusts the server by, when TLS is on

    @classmethod
    def start(
        cls, workdir: Path, config: SchedulerConfig, settings: ConsumerSettings, tls: bool
    ) -> LocalBus:
        """nats-server with every user ``config`` runs, then the streams, consumers and
        lease buckets made as the setup user would (``gangway deploy bus``)."""
        subjects = settings.subjects
        users = service_permissions(subjects, config)
        passwords = {user: secrets.token_hex(32) for user in users}
        text = nats_authorization(users, passwords) + f'no_auth_user: "{VIEWER}"\n'
        ca = None
        if tls:
            files = write_serving_certificate(workdir / "tls", (_HOST,), "gangway-nats")
            text += f'tls {{\n  cert_file: "{files.cert}"\n  key_file: "{files.key}"\n}}\n'
            ca = files.ca
        workdir.mkdir(parents=True, exist_ok=True)
        config_file = workdir / "nats.conf"
        config_file.touch(mode=0o600)  # it holds the passwords
        config_file.write_text(text)
        server = NatsServer.start(workdir=workdir)
        started = cls(server, passwords, ca)
        try:
            asyncio.run(set_up(started.as_user(settings, SETUP), durables(subjects, config)))
        except BaseException:
            server.stop()
            raise
        return started

    @property
    def url(self) -> str:
        return self.server.url

    def settings_of(self, user: str) -> dict[str, str]:
        """The GANGWAY_NATS_* a service runs with, as its user."""
        found = {"GANGWAY_NATS_USER": user, "GANGWAY_NATS_PASSWORD": self.passwords[user]}
        if self.ca is not None:
            found["GANGWAY_NATS_CA"] = str(self.ca)
        return found

    def stop(self) -> None:
        self.server.stop()

    def as_user(self, settings: Settings, user: str) -> Settings:
        """``settings`` connecting to this bus as ``user``: what :meth:`settings_of` gives a
        service in its environment, as fields."""
        return settings.model_copy(
            update={
                "nats_url": self.url,
                "nats_user": user,
                "nats_password": SecretStr(self.passwords[user]),
                "nats_ca": self.ca,
            }
        )
