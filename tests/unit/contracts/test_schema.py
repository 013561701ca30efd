"""The checked-in JSON Schema matches the models, and v1 only ever grows."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema

from gangway_contracts import schema
from gangway_contracts.codec import from_object, to_object
from gangway_contracts.grove import PodGang
from tests.support.manifests import fixture


def test_schema_file_matches_the_models() -> None:
    assert schema.main(["--check"]) == 0, "run: make schema"


def test_v1_is_additive_to_its_baseline() -> None:
    baseline = json.loads(schema.BASELINE_FILE.read_text())
    assert schema.breaking_changes(baseline, schema.contracts_schema()) == []


def test_breaking_changes_are_named() -> None:
    old = schema.contracts_schema()
    new: dict[str, Any] = copy.deepcopy(old)
    del new["$defs"]["PodGroup"]["properties"]["minReplicas"]
    new["$defs"]["PodGangSpec"]["required"].append("priorityClassName")
    new["messages"]["JournalEvent"]["anyOf"] = new["messages"]["JournalEvent"]["anyOf"][1:]
    del new["$defs"]["UnsupportedFeature"]
    assert schema.breaking_changes(old, new) == [
        "PodGangSpec.priorityClassName: newly required",
        "PodGroup.minReplicas: removed",
        "UnsupportedFeature: removed",
        "message JournalEvent: #/$defs/PodCliqueSetObserved removed",
    ]


def test_encoded_messages_validate_against_the_schema() -> None:
    document = schema.contracts_schema()
    podgang = from_object(fixture("podgangs/base-gang.yaml"), PodGang)
    validator = jsonschema.Draft202012Validator(
        {**document["messages"]["PodGang"], "$defs": document["$defs"]}
    )
    assert list(validator.iter_errors(to_object(podgang))) == []
