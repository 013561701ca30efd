"""The init container of a pod whose clique starts after others (startup.py): waits until
each named headless Service resolves to at least its number of addresses — the ready pods of
that clique, as the endpoint-slice controller lists them — then exits 0 and the pod's own
containers start.

    python -m gangway_podgang.wait_ready <service address>=<ready pods> ...

It asks the pod's resolver (the cluster's DNS), or ``--nameserver HOST:PORT``. It holds no
credentials and talks to no Gangway process; it waits as long as it takes, as Grove's does,
saying every so often what it still waits for. A name the DNS does not know yet counts 0.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from typing import Final

import dns.exception
import dns.resolver

log = logging.getLogger("gangway.wait_ready")

POLL_SECONDS: Final = 1.0  # between two rounds of lookups
SAY_EVERY: Final = 15.0  # seconds between two "still waiting" lines


def _wait(text: str) -> tuple[str, int]:
    address, sep, count = text.rpartition("=")
    if not sep or not address or not count.isdigit() or int(count) < 1:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected <service address>=<ready pods>, a count of at least 1"
        )
    return address.rstrip("."), int(count)


def _nameserver(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: expected HOST:PORT")
    return host, int(port)


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="gangway_podgang.wait_ready",
        description="Wait until each headless Service lists enough ready pods.",
    )
    parser.add_argument("waits", nargs="+", type=_wait, metavar="ADDRESS=READY")
    parser.add_argument("--nameserver", type=_nameserver, help="HOST:PORT (default: the pod's)")
    parser.add_argument("--poll-seconds", type=float, default=POLL_SECONDS)
    return parser.parse_args(argv)


def resolver_for(nameserver: tuple[str, int] | None) -> dns.resolver.Resolver:
    if nameserver is None:
        return dns.resolver.Resolver()  # the pod's /etc/resolv.conf
    resolver = dns.resolver.Resolver(configure=False)
    resolver.nameservers, resolver.port = [nameserver[0]], nameserver[1]
    return resolver


def ready_pods(resolver: dns.resolver.Resolver, address: str) -> int:
    """The addresses the Service resolves to (IPv4 and IPv6): its ready pods."""
    found: set[str] = set()
    for record_type in ("A", "AAAA"):
        try:
            answer = resolver.resolve(f"{address}.", record_type, raise_on_no_answer=False)
        except dns.resolver.NXDOMAIN:
            return 0  # no such Service yet, or no ready pod: the same to a waiting pod
        except dns.exception.DNSException as exc:  # timeouts, no nameserver: try again
            log.debug("%s %s: %s", address, record_type, exc)
            continue
        found.update(record.to_text() for record in answer)
    return len(found)


def wait(
    waits: Sequence[tuple[str, int]], resolver: dns.resolver.Resolver, poll_seconds: float
) -> None:
    log.info("waiting for %s", ", ".join(f"{a} ({n} ready)" for a, n in waits))
    said = time.monotonic()
    while True:
        counts = {address: ready_pods(resolver, address) for address, _ in waits}
        short = [(a, n) for a, n in waits if counts[a] < n]
        if not short:
            log.info("ready: %s", ", ".join(f"{a} ({counts[a]})" for a, _ in waits))
            return
        if time.monotonic() - said >= SAY_EVERY:
            said = time.monotonic()
            log.info("still waiting: %s", ", ".join(f"{a} {counts[a]}/{n}" for a, n in short))
        time.sleep(poll_seconds)


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        wait(args.waits, resolver_for(args.nameserver), args.poll_seconds)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
