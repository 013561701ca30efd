"""Properties of the wire contracts, for every value hypothesis can think of."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from gangway_contracts import events, subjects
from gangway_contracts.errors import FieldError
from gangway_contracts.grove import (
    PackConstraint,
    PodGang,
    PodGangSpec,
    PodGangTopologyConstraint,
    PodGroup,
)
from gangway_contracts.k8s import NamespacedName, ObjectMeta

# DNS-1123 subdomains: what Kubernetes allows in names (namespaces are labels, a subset).
label = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?\Z")
subdomain = st.lists(label, min_size=1, max_size=4).map(".".join)
kind = st.sampled_from([*subjects.Kind, "kai-podgroup", "workload"])


prefix = st.from_regex(r"\A[a-z][a-z0-9-]{0,30}\Z")


@given(prefix, kind, st.one_of(st.just(""), label), st.one_of(st.just(""), label), subdomain)
def test_object_subject_round_trips(
    prefix: str, kind: str, owner: str, namespace: str, name: str
) -> None:
    names = subjects.Subjects(prefix)
    key = subjects.ObjectKey(kind, owner, namespace, name)
    subject = names.object(key)
    assert names.parse_object(subject) == key
    assert len(subject.split(".")) == 6  # tokens never leak from names


def test_filters_and_stream_names() -> None:
    names = subjects.Subjects("t-1")
    assert names.objects_stream == "T_1_OBJECTS"
    assert names.objects_filter(owner="kai-scheduler") == "t-1.objects.*.kai-scheduler.>"
    assert names.objects_filter("podcliqueset", "") == "t-1.objects.podcliqueset.-.>"
    assert names.journal_filter("ns", "my.pcs") == "t-1.journal.ns.my_pcs.>"
    assert names.backend("kai-scheduler", subjects.BackendOperation.VALIDATE) == (
        "t-1.backend.kai-scheduler.validate"
    )


pack = st.builds(
    PodGangTopologyConstraint,
    pack_constraint=st.builds(
        PackConstraint,
        required=st.none() | subdomain,
        preferred=st.none() | subdomain,
    ),
)
podgangs = st.builds(
    PodGang,
    metadata=st.builds(
        ObjectMeta,
        name=subdomain,
        namespace=label,
        labels=st.dictionaries(subdomain, st.text(max_size=10), max_size=3),
    ),
    spec=st.builds(
        PodGangSpec,
        podgroups=st.lists(
            st.builds(
                PodGroup,
                name=subdomain,
                pod_references=st.lists(st.builds(NamespacedName, namespace=label, name=subdomain)),
                min_replicas=st.integers(0, 2**31 - 1),
                topology_constraint=st.none() | pack,
            ),
            max_size=5,
        ),
        topology_constraint=st.none() | pack,
        priority_class_name=st.none() | subdomain,
    ),
)


@given(podgangs)
def test_podgang_encode_decode_is_identity(podgang: PodGang) -> None:
    assert msgspec.json.decode(msgspec.json.encode(podgang), type=PodGang) == podgang


workload = st.builds(NamespacedName, namespace=label, name=subdomain)
at = st.datetimes(timezones=st.just(UTC), min_value=datetime(2000, 1, 1))
event = st.one_of(
    st.builds(
        events.PodGangCreated,
        workload=workload,
        at=at,
        service=label,
        podgang=subdomain,
        backend=label,
    ),
    st.builds(
        events.GatesLifted,
        workload=workload,
        at=at,
        service=label,
        podgang=subdomain,
        pods=st.lists(subdomain),
    ),
    st.builds(
        events.AdmissionRejected,
        workload=workload,
        at=at,
        service=label,
        operation=st.sampled_from(["CREATE", "UPDATE"]),
        errors=st.lists(st.builds(FieldError, field=st.text(), reason=st.text())),
    ),
)


@given(event)
def test_journal_events_decode_through_the_union(e: events.JournalEvent) -> None:
    wire = msgspec.json.encode(e)
    assert msgspec.json.decode(wire)["type"] == events.event_type(e)
    assert msgspec.json.decode(wire, type=events.AnyJournalEvent) == e
