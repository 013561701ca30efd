"""One NATS connection per service process, reconnecting for as long as the process lives."""

from __future__ import annotations

import logging
import ssl
from typing import Any

import nats
from nats.aio.client import Client as NatsClient

from gangway_contracts.permissions import inbox_prefix
from gangway_runtime.settings import ServiceSettings

log = logging.getLogger(__name__)


def credentials(settings: ServiceSettings) -> dict[str, Any]:
    """Who a connection is, and whom it trusts: a creds file, or user and password; a CA for
    TLS. The services and ``gangway trace`` read them from the same settings."""
    password = settings.nats_password.get_secret_value() if settings.nats_password else None
    return {
        "user_credentials": str(settings.nats_creds) if settings.nats_creds else None,
        "user": settings.nats_user,
        "password": password,
        "tls": ssl.create_default_context(cafile=settings.nats_ca) if settings.nats_ca else None,
    }


async def connect(settings: ServiceSettings, name: str) -> NatsClient:
    """``name``: the service's name under the prefix (``Subjects.service_name``)."""

    async def disconnected() -> None:
        if nc.is_closed:  # nats-py says "disconnected" on a close of our own too
            return
        log.warning("NATS disconnected; reconnecting")

    async def reconnected() -> None:
        log.info("NATS reconnected to %s", nc.connected_url)

    async def error(exc: Exception) -> None:
        if isinstance(exc, ssl.SSLCertVerificationError):
            # Retrying cannot help until the CA or the server's certificate changes.
            trusted = settings.nats_ca or "the image's trusted CAs"
            log.error(
                "NATS: the server's certificate is not trusted by GANGWAY_NATS_CA (%s): %s",
                trusted,
                exc.verify_message or exc,
            )
            return
        log.warning("NATS: %s", exc)

    nc = await nats.connect(
        **credentials(settings),
        servers=settings.nats_servers,
        name=name,
        inbox_prefix=inbox_prefix(name).encode(),
        # A service outlives any NATS outage: keep trying, never give up and exit.
        max_reconnect_attempts=-1,
        reconnect_time_wait=1,
        allow_reconnect=True,
        disconnected_cb=disconnected,
        reconnected_cb=reconnected,
        error_cb=error,
    )
    return nc
