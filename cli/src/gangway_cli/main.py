"""Entry point of the ``gangway`` command.

Only the subcommand asked for is imported: the others bring the API client, the backends and
the control plane with them (0.7 s of imports for ``gangway --help`` before).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from importlib.metadata import version
from typing import Final

# Subcommand → (module with its add_arguments(parser) and run(args), what it does), in the
# order --help lists them.
COMMANDS: Final = {
    "config": ("config_check", "operator configuration"),
    "plan": ("plan", "print the PodGangs (and pods) a PodCliqueSet manifest produces"),
    "render": ("render", "print what the scheduler backend would create for a PodCliqueSet"),
    "validate": ("validate", "run admission's checks on a PodCliqueSet manifest, offline"),
    "up": ("up", "run Gangway locally: control plane, NATS, services"),
    "demo": ("demo", "apply sample PodCliqueSets and show their progress (after gangway up)"),
    "webhook-certs": ("certs", "make a CA and a serving certificate for a local webhook"),
    "deploy": ("deploy", "what an installation needs (deploy/)"),
    "trace": ("trace", "a PodCliqueSet's timeline from the journal, and its trace id"),
    "whatif": ("whatif", "would a PodCliqueSet be placed, and where: on a local copy of the nodes"),
    "conformance": (
        "conformance.command",
        "does a backend and its scheduler keep GREP-375's promises: scenarios on a local cluster",
    ),
    "why": (
        "why",
        "why a PodCliqueSet's gangs are not running, in the same words on every scheduler",
    ),
}


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser, with the arguments of the one subcommand ``argv`` names (default: this
    process's arguments); the others only named, for --help."""
    parser = argparse.ArgumentParser(
        prog="gangway",
        description="Gang-scheduling backends for Grove workloads, as services over NATS.",
        epilog="Exit status: 0 done; 1 what was given was refused or what was needed failed "
        "(an invalid manifest, NATS or the API server unreachable), said in one line per "
        "problem; 2 the command line itself is wrong (an option, a value of one); 3 (whatif) a "
        "gang would not be placed, (conformance) a scenario failed.",
    )
    parser.add_argument("--version", action="version", version=f"gangway {version('gangway-cli')}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    words = [word for word in (sys.argv[1:] if argv is None else argv) if word[:1] != "-"]
    chosen = words[0] if words else None
    for name, (module, summary) in COMMANDS.items():
        command = subparsers.add_parser(name, help=summary, description=summary)
        if name == chosen:
            importlib.import_module(f"gangway_cli.{module}").add_arguments(command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser(argv).parse_args(argv)
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
