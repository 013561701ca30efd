"""How every subcommand reports: YAML (or JSON, ``-o json``) on stdout, one
``<field>: <reason>`` line per error on stderr, exit 1 on any error."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import Any

import yaml

from gangway_contracts.errors import FieldError


def add_output_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        choices=("yaml", "json"),
        default="yaml",
        help="yaml (a document each), or json (several in a List, as kubectl prints them)",
    )


def print_documents(output: str, *documents: Any) -> None:
    if output == "json":
        several = {"apiVersion": "v1", "kind": "List", "items": list(documents)}
        json.dump(documents[0] if len(documents) == 1 else several, sys.stdout, indent=2)
        print()
        return
    yaml.safe_dump_all(documents, sys.stdout, sort_keys=False, explicit_start=len(documents) > 1)


def print_errors(errors: Iterable[FieldError | str]) -> int:
    for error in errors:
        print(error, file=sys.stderr)
    return 1
