"""The webhook's serving certificate: loaded at start, re-read whenever its files change.

Reloading into the same SSLContext affects every handshake after it, so a rotated
certificate is served without a restart and without dropping connections.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from pathlib import Path

from gangway_admission import metrics

log = logging.getLogger(__name__)

Stamp = tuple[int, int, int, int]  # mtime_ns and size of the certificate and the key


def _server_context() -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


class ReloadingCertificate:
    def __init__(self, cert: Path, key: Path) -> None:
        self.cert = cert
        self.key = key
        self.context = _server_context()
        self._loaded: Stamp | None = None

    def _stamp(self) -> Stamp:
        cert, key = self.cert.stat(), self.key.stat()
        return (cert.st_mtime_ns, cert.st_size, key.st_mtime_ns, key.st_size)

    def load(self) -> bool:
        """Load the files if they changed since the last load; True if loaded. A failed
        reload keeps serving the previous certificate; a failed first load raises."""
        try:
            stamp = self._stamp()
            if stamp == self._loaded:
                return False
            # A failed load leaves a context half-changed (new certificate, old key): try
            # the pair on a scratch context first, and touch the live one only if it fits.
            # (Should the files change between the two loads, the stamp stays old and the
            # next poll loads again.)
            _server_context().load_cert_chain(self.cert, self.key)
            self.context.load_cert_chain(self.cert, self.key)
        except (OSError, ssl.SSLError) as exc:
            metrics.TLS_RELOADS.labels("failed").inc()
            if self._loaded is None:
                raise
            # Mid-rotation (certificate written, key not yet): the next poll gets both.
            log.warning("serving certificate not reloaded, keeping the previous one: %s", exc)
            return False
        self._loaded = stamp
        metrics.TLS_RELOADS.labels("loaded").inc()
        log.info("serving certificate loaded from %s", self.cert)
        return True

    async def watch(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            self.load()
