"""``gangway config check FILE``: which scheduler backends a configuration enables."""

from __future__ import annotations

import argparse
from pathlib import Path

from gangway_cli.output import add_output_option, print_documents, print_errors
from gangway_contracts.config import load_operator_config
from gangway_contracts.errors import FieldError, FieldErrors


def add_arguments(config: argparse.ArgumentParser) -> None:
    config_sub = config.add_subparsers(dest="config_command", required=True)
    check = config_sub.add_parser(
        "check", help="validate the scheduler section; print the default and enabled backends"
    )
    check.add_argument("file", type=Path, help="operator configuration YAML")
    add_output_option(check)
    check.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        text = args.file.read_text()
    except OSError as exc:
        return print_errors([FieldError(field="", reason=f"{args.file}: {exc.strerror}")])
    try:
        config = load_operator_config(text)
    except FieldErrors as exc:
        return print_errors(exc.errors)
    print_documents(args.output, {"default": config.default, "enabled": config.enabled})
    return 0
