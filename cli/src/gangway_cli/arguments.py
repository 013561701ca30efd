"""Command-line arguments more than one subcommand takes."""

from __future__ import annotations

import argparse


def workload(text: str) -> tuple[str, str]:
    """NAMESPACE/NAME of a PodCliqueSet (argparse says what is wrong, exit 2)."""
    namespace, _, name = text.partition("/")
    if not namespace or not name or "/" in name:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAMESPACE/NAME")
    return namespace, name


def add_workload(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "workload", type=workload, metavar="NAMESPACE/NAME", help="the PodCliqueSet"
    )
