"""The serving certificate is re-read when its files change: the next handshake gets the
new one, without a restart; a half-written rotation keeps the old one."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

from aiohttp import web
from cryptography import x509

from gangway_admission.tls import ReloadingCertificate
from gangway_localcluster.certs import write_serving_certificate
from gangway_localcluster.processes import free_port


async def served_serial(port: int, ca: Path) -> int:
    context = ssl.create_default_context(cafile=str(ca))
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    await writer.wait_closed()
    return x509.load_der_x509_certificate(der).serial_number


async def test_rotated_certificate_is_served_without_restart(tmp_path: Path) -> None:
    first = write_serving_certificate(tmp_path / "a", ("127.0.0.1",))
    live = tmp_path / "live"
    live.mkdir()
    cert, key = live / "tls.crt", live / "tls.key"
    cert.write_bytes(first.cert.read_bytes())
    key.write_bytes(first.key.read_bytes())
    certificate = ReloadingCertificate(cert, key)
    assert certificate.load()
    runner = web.AppRunner(web.Application())
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=certificate.context).start()
    try:
        before = await served_serial(port, first.ca)
        assert not certificate.load()  # unchanged files: nothing to do

        second = write_serving_certificate(tmp_path / "b", ("127.0.0.1",))
        cert.write_bytes(second.cert.read_bytes())  # mid-rotation: the key is still the old one
        assert not certificate.load()
        assert await served_serial(port, first.ca) == before

        key.write_bytes(second.key.read_bytes())
        assert certificate.load()
        after = await served_serial(port, second.ca)
        assert after != before
        assert after == x509.load_pem_x509_certificate(second.cert.read_bytes()).serial_number
    finally:
        await runner.cleanup()
