"""Entry point of the ``gangway`` command."""

from __future__ import annotations

import argparse
import os
import sys
from importlib.metadata import version

from gangway_cli import certs, config_check, demo, deploy, plan, render, trace, up, validate


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gangway",
        description="Gang-scheduling backends for Grove workloads, as services over NATS.",
    )
    parser.add_argument("--version", action="version", version=f"gangway {version('gangway-cli')}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    config_check.add_parser(subparsers)
    plan.add_parser(subparsers)
    render.add_parser(subparsers)
    validate.add_parser(subparsers)
    up.add_parser(subparsers)
    demo.add_parser(subparsers)
    certs.add_parser(subparsers)
    deploy.add_parser(subparsers)
    trace.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except BrokenPipeError:
        # The reader went away (`gangway plan … | head`): what it read was all it wanted.
        # Point stdout at /dev/null so the interpreter's last flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
