"""Entry point of the ``gangway`` command."""

from __future__ import annotations

import argparse
import sys

from gangway_cli import certs, config_check, demo, deploy, plan, render, trace, up, validate


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gangway",
        description="Gang-scheduling backends for Grove workloads, as services over NATS.",
    )
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
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
