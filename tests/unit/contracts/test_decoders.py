"""Every contract a service decodes from the bus, fed any bytes and any JSON: it decodes, or
raises one of ``codec.MALFORMED`` (what every consumer dead-letters) — never anything else,
and never a crash for nesting too deep."""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gangway_contracts.codec import MALFORMED
from gangway_contracts.events import AnyJournalEvent
from gangway_contracts.grove import ClusterTopologyBinding, PodCliqueSet, PodGang
from gangway_contracts.pods import Pod
from gangway_contracts.records import ObjectRecord
from gangway_contracts.rpc import (
    PreparePodsReply,
    PreparePodsRequest,
    ValidateReply,
    ValidateRequest,
)

DECODED: list[Any] = [
    ObjectRecord,
    PodCliqueSet,
    PodGang,
    Pod,
    ClusterTopologyBinding,
    AnyJournalEvent,
    PreparePodsRequest,
    PreparePodsReply,
    ValidateRequest,
    ValidateReply,
]

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=30,
)


def _decodes_or_is_malformed(data: bytes, kind: Any) -> None:
    with contextlib.suppress(*MALFORMED):
        msgspec.json.decode(data, type=kind)


@pytest.mark.parametrize("kind", DECODED, ids=lambda k: getattr(k, "__name__", str(k)))
@settings(max_examples=150)
@given(data=st.binary(max_size=200))
def test_any_bytes(kind: Any, data: bytes) -> None:
    _decodes_or_is_malformed(data, kind)


@pytest.mark.parametrize("kind", DECODED, ids=lambda k: getattr(k, "__name__", str(k)))
@settings(max_examples=150)
@given(value=_json)
def test_any_json(kind: Any, value: Any) -> None:
    _decodes_or_is_malformed(msgspec.json.encode(value), kind)


@pytest.mark.parametrize("kind", DECODED, ids=lambda k: getattr(k, "__name__", str(k)))
def test_nesting_too_deep(kind: Any) -> None:
    with pytest.raises(MALFORMED):
        msgspec.json.decode(b"[" * 100_000 + b"]" * 100_000, type=kind)
    with pytest.raises(MALFORMED):
        msgspec.json.decode(b'{"a":' * 50_000 + b"1" + b"}" * 50_000, type=kind)
