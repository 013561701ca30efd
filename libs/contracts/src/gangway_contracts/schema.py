"""Export the JSON Schema of every wire contract to ``libs/contracts/schema/v1.json``.

python -m gangway_contracts.schema --write   # regenerate after an (additive) change
python -m gangway_contracts.schema --check   # exit 1 when models and file disagree
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Final

import msgspec

from gangway_contracts import CONTRACTS_VERSION
from gangway_contracts.events import AnyJournalEvent
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.pods import Pod
from gangway_contracts.records import ObjectRecord
from gangway_contracts.rpc import (
    PreparePodsReply,
    PreparePodsRequest,
    ValidateReply,
    ValidateRequest,
)

# Top-level messages: what a subject or an RPC carries. Everything else is reached from them.
MESSAGES: Final[dict[str, Any]] = {
    "ObjectRecord": ObjectRecord,
    "JournalEvent": AnyJournalEvent,
    "PreparePodsRequest": PreparePodsRequest,
    "PreparePodsReply": PreparePodsReply,
    "ValidateRequest": ValidateRequest,
    "ValidateReply": ValidateReply,
    "PodCliqueSet": PodCliqueSet,
    "PodGang": PodGang,
    "Pod": Pod,
}

SCHEMA_DIR: Final = Path(__file__).resolve().parents[2] / "schema"
SCHEMA_FILE: Final = SCHEMA_DIR / f"{CONTRACTS_VERSION}.json"
# The schema as v1 was first released; tests check every later v1 only adds to it.
BASELINE_FILE: Final = SCHEMA_DIR / f"{CONTRACTS_VERSION}-baseline.json"


def contracts_schema() -> dict[str, Any]:
    schemas, components = msgspec.json.schema_components(
        list(MESSAGES.values()), ref_template="#/$defs/{name}"
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Gangway contracts {CONTRACTS_VERSION}",
        "messages": dict(zip(MESSAGES, schemas, strict=True)),
        "$defs": dict(sorted(components.items())),
    }


def breaking_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What ``new`` breaks for a reader or writer of ``old``: within a version only additions
    are allowed (new optional fields, new structs, new members of a union)."""
    problems: list[str] = []
    for name, old_def in old["$defs"].items():
        new_def = new["$defs"].get(name)
        if new_def is None:
            problems.append(f"{name}: removed")
            continue
        new_props = new_def.get("properties", {})
        for prop, prop_schema in old_def.get("properties", {}).items():
            if prop not in new_props:
                problems.append(f"{name}.{prop}: removed")
            elif new_props[prop] != prop_schema:
                problems.append(f"{name}.{prop}: changed")
        added = set(new_def.get("required", [])) - set(old_def.get("required", []))
        problems.extend(f"{name}.{prop}: newly required" for prop in sorted(added))
    for message, old_schema in old["messages"].items():
        new_schema = new["messages"].get(message)
        if new_schema is None:
            problems.append(f"message {message}: removed")
            continue
        old_members = {m.get("$ref") for m in old_schema.get("anyOf", [old_schema])}
        new_members = {m.get("$ref") for m in new_schema.get("anyOf", [new_schema])}
        problems.extend(f"message {message}: {ref} removed" for ref in old_members - new_members)
    return problems


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true", help="write the schema file")
    group.add_argument("--check", action="store_true", help="fail when the file is stale")
    args = parser.parse_args(argv)
    text = render(contracts_schema())
    if args.write:
        SCHEMA_FILE.parent.mkdir(parents=True, exist_ok=True)
        SCHEMA_FILE.write_text(text)
        return 0
    if not SCHEMA_FILE.exists() or SCHEMA_FILE.read_text() != text:
        print(
            f"{SCHEMA_FILE} is stale: run python -m gangway_contracts.schema --write",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
