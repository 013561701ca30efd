"""How every subcommand reports: YAML on stdout, one ``<field>: <reason>`` line per error
on stderr, exit 1 on any error."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

import yaml

from gangway_contracts.errors import FieldError


def print_yaml(*documents: Any) -> None:
    yaml.safe_dump_all(documents, sys.stdout, sort_keys=False, explicit_start=len(documents) > 1)


def print_errors(errors: Iterable[FieldError | str]) -> int:
    for error in errors:
        print(error, file=sys.stderr)
    return 1
