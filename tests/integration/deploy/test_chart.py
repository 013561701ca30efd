"""deploy/charts/gangway: for the choices a kustomize overlay makes the chart installs the
same objects; its objects pass a server-side dry run for the default and for each backend;
values that cannot work are refused, naming the value."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio.client.api_client import ApiClient

from gangway_localcluster.certs import CertificateAuthority
from tests.support.chart import BACKENDS, CHART, ChartRefused, chart, helm, values_for
from tests.support.deploy import (
    NAMESPACE,
    NOT_SERVED,
    OVERLAYS,
    ensure_namespace,
    rendered,
    rendered_crds,
)
from tests.support.kube import server_side_apply

HELM_ONLY = frozenset(
    {"app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "helm.sh/chart"}
)
# kustomize's generated ConfigMaps carry a hash of their content in their name.
HASHED = re.compile(r"\b(gangway-(?:settings|config|nats-auth|nats|dashboard))-[a-z0-9]{10}\b")
Key = tuple[str, str, str]


def _comparable(docs: list[dict[str, Any]]) -> dict[Key, Any]:
    """Each object as both tools should agree on it: without helm's own labels, the config
    checksum, a default pull policy, kustomize's name hashes, generated files' comments."""
    found: dict[Key, Any] = {}
    for doc in yaml.safe_load_all(HASHED.sub(r"\1", yaml.safe_dump_all(docs))):
        meta = doc["metadata"]
        if doc["kind"] == "Job" and "helm.sh/chart" in (meta.get("labels") or {}):
            meta["name"] = meta["name"].removesuffix("-r1")  # the chart's: by revision (1)
        key = (doc["kind"], meta.get("namespace", ""), meta["name"])
        if doc["kind"] == "CustomResourceDefinition":  # helm installs crds/ untouched
            found[key] = doc["spec"]
            continue
        labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in HELM_ONLY}
        meta["labels"] = labels
        for template in _pod_templates(doc):
            template["metadata"].pop("annotations", None)
            for container in template["spec"]["containers"]:
                if container.get("imagePullPolicy") == "IfNotPresent":
                    del container["imagePullPolicy"]
        if doc["kind"] == "ConfigMap":
            doc["data"] = {name: _content(name, text) for name, text in doc["data"].items()}
        found[key] = doc
    return found


def _pod_templates(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = doc.get("spec") or {}
    if doc["kind"] == "CronJob":
        return [spec["jobTemplate"]["spec"]["template"]]
    return [spec["template"]] if doc["kind"] in {"Deployment", "StatefulSet", "Job"} else []


def _content(name: str, text: str) -> Any:
    if name.endswith(".yaml"):
        return yaml.safe_load(text)
    return [line for line in text.splitlines() if not line.lstrip().startswith("#")]


def _same_objects(chart_docs: list[dict[str, Any]], kustomize_docs: list[dict[str, Any]]) -> None:
    """Helm installs its crds/ on first install and never deletes them; with kustomize they
    are deploy/crds, applied on their own: compared with that."""
    kustomize_docs = kustomize_docs + rendered_crds()
    ours, theirs = _comparable(chart_docs), _comparable(kustomize_docs)
    assert sorted(ours) == sorted(theirs)
    for key, doc in theirs.items():
        assert ours[key] == doc, key


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_chart_installs_what_the_overlay_installs(overlay: str) -> None:
    _same_objects(chart(values_for(overlay)), rendered(overlay))


def test_with_monitoring_the_chart_installs_what_the_component_adds() -> None:
    values = values_for("default") | {"metrics": {"serviceMonitor": True, "dashboard": True}}
    _same_objects(chart(values), rendered("default", ("monitoring",)))


# The CA of a bus of the user's own (its PEM, as a platform team would give it).
EXTERNAL_CA = CertificateAuthority("nats.messaging-ca").cert_pem.decode()
CHOICES: dict[str, dict[str, Any]] = {
    "defaults": {},
    **{
        f"{key} alone": {
            "backends": {k: {"enabled": k == key} for k in BACKENDS},
            "scheduler": {"profiles": [{"name": chart_profile, "default": True}]},
        }
        for key, chart_profile in (
            ("kai", "kai-scheduler"),
            ("kube", "default-scheduler"),
            ("coscheduling", "coscheduling"),
            ("koordinator", "koordinator"),
            ("volcano", "volcano"),
        )
    },
    "external NATS, cert-manager, JSON logs, gRPC traces": {
        "nats": {"bundled": False, "url": "nats://nats.messaging:4222", "streamReplicas": 1},
        "webhook": {"certificates": "cert-manager"},
        "logs": {"format": "json", "level": "debug"},
        "tracing": {"otlpEndpoint": "http://otel-collector.observability:4317"},
        "settings": {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
        "image": {"repository": "registry.example.com/gangway", "tag": "0.1.1"},
        "podgang": {"replicas": 3},
    },
    "Kueue in front": {"kueue": {"enabled": True}},
    "external NATS over TLS with its CA, self-signed": {
        "nats": {"bundled": False, "url": "tls://nats.messaging:4222", "ca": EXTERNAL_CA},
    },
}


@pytest.mark.parametrize("choice", CHOICES)
async def test_every_object_passes_a_server_side_dry_run(api: ApiClient, choice: str) -> None:
    await ensure_namespace(api)
    kinds = set()
    for doc in chart(CHOICES[choice]):
        if doc["apiVersion"] in NOT_SERVED or doc["kind"] == "CustomResourceDefinition":
            continue
        applied = await server_side_apply(api, doc, namespace=NAMESPACE, dry_run=True)
        assert applied["metadata"]["name"] == doc["metadata"]["name"]
        kinds.add(doc["kind"])
    assert {"Deployment", "ConfigMap", "ValidatingWebhookConfiguration"} <= kinds


def test_values_reach_the_objects() -> None:
    docs = chart(CHOICES["external NATS, cert-manager, JSON logs, gRPC traces"])
    by_key = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    assert ("StatefulSet", "gangway-nats") not in by_key
    settings = by_key[("ConfigMap", "gangway-settings")]["data"]
    assert settings["GANGWAY_NATS_URL"] == "nats://nats.messaging:4222"
    assert settings["GANGWAY_STREAMS__REPLICAS"] == "1"
    assert settings["GANGWAY_LOG_FORMAT"] == "json"
    assert settings["GANGWAY_LOG_LEVEL"] == "DEBUG"
    assert settings["OTEL_EXPORTER_OTLP_PROTOCOL"] == "grpc"
    podgang = by_key[("Deployment", "gangway-podgang")]
    assert podgang["spec"]["replicas"] == 3
    [container] = podgang["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example.com/gangway:0.1.1"
    assert ("Certificate", "gangway-admission") in by_key
    # No CA given: the image's trusted CAs; nothing of the bundled bus's certificates.
    assert "GANGWAY_NATS_CA" not in settings
    assert not any(name.startswith("gangway-nats") for kind, name in by_key if kind != "Service")
    for template in (t for doc in docs for t in _pod_templates(doc)):
        assert "gangway-nats-tls" not in yaml.safe_dump(template)


def test_the_bundled_bus_serves_tls_and_every_service_verifies_it() -> None:
    docs = chart()
    by_key = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    settings = by_key[("ConfigMap", "gangway-settings")]["data"]
    assert settings["GANGWAY_NATS_URL"].startswith("tls://")
    assert settings["GANGWAY_NATS_CA"] == "/etc/gangway/nats-ca.crt"
    nats = by_key[("StatefulSet", "gangway-nats")]["spec"]["template"]["spec"]
    assert [c["name"] for c in nats["containers"]] == ["nats", "nats-reload"]
    assert nats["shareProcessNamespace"] is True
    job = by_key[("Job", "gangway-webhook-cert-r1")]["spec"]["template"]["spec"]
    assert [c["name"] for c in job["containers"]] == ["webhook-cert", "nats-cert"]
    clients = [
        d
        for d in docs
        if d["kind"] in ("Deployment", "Job") and "cert" not in d["metadata"]["name"]
    ]
    assert len(clients) >= 5  # the services, the setup Job
    for doc in clients:
        [config] = [v for v in _pod_templates(doc)[0]["spec"]["volumes"] if v["name"] == "config"]
        secrets = [s["secret"] for s in config["projected"]["sources"] if "secret" in s]
        assert secrets == [
            {"name": "gangway-nats-tls", "items": [{"key": "ca.crt", "path": "nats-ca.crt"}]}
        ], doc["metadata"]["name"]


def test_an_external_bus_s_ca_is_what_the_services_verify_it_by() -> None:
    docs = chart(CHOICES["external NATS over TLS with its CA, self-signed"])
    by_key = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    assert ("StatefulSet", "gangway-nats") not in by_key
    settings = by_key[("ConfigMap", "gangway-settings")]["data"]
    assert settings["GANGWAY_NATS_CA"] == "/etc/gangway/nats-ca.crt"
    ca = by_key[("Secret", "gangway-nats-tls")]["data"]
    assert base64.b64decode(ca["ca.crt"]).decode() == EXTERNAL_CA
    assert set(ca) == {"ca.crt"}
    job = by_key[("Job", "gangway-webhook-cert-r1")]["spec"]["template"]["spec"]
    assert [c["name"] for c in job["containers"]] == ["webhook-cert"]


def test_every_pod_of_gangway_runs_where_the_values_place_it() -> None:
    """nodeSelector merged into each pod template's own, tolerations set: dedicated nodes."""
    toleration = {"key": "dedicated", "operator": "Equal", "value": "system"}
    values = {"nodeSelector": {"pool": "system"}, "tolerations": [toleration]}
    templates = [t for doc in chart(values) for t in _pod_templates(doc)]
    assert len(templates) >= 7  # services, NATS, the Jobs and the CronJob
    for template in templates:
        assert template["spec"]["nodeSelector"]["pool"] == "system"
        assert template["spec"]["tolerations"] == [toleration]
    assert not any("nodeSelector" in t["spec"] for doc in chart() for t in _pod_templates(doc))


def test_the_small_profile_runs_one_of_each_with_small_requests() -> None:
    """values-small.yaml (the real-node suite installs with it) passes the schema and asks
    for well under one CPU in all: it fits a two-core node beside its workloads."""
    docs = chart(yaml.safe_load((CHART / "values-small.yaml").read_text()))
    workloads = [d for d in docs if d["kind"] in ("Deployment", "StatefulSet")]
    assert {d["metadata"]["name"]: d["spec"]["replicas"] for d in workloads} == {
        "gangway-admission": 1,
        "gangway-backend-kai": 1,
        "gangway-backend-kube": 1,
        "gangway-bus-keeper": 1,
        "gangway-nats": 3,
        "gangway-podgang": 1,
        "gangway-watcher": 1,
    }
    millicores = sum(
        d["spec"]["replicas"] * int(c["resources"]["requests"]["cpu"].removesuffix("m"))
        for d in workloads
        for c in d["spec"]["template"]["spec"]["containers"]
    )
    assert millicores <= 200


@pytest.mark.parametrize(
    ("values", "named"),
    [
        # By the chart's values schema: a wrong type or choice, a misspelt key.
        ({"webhook": {"certificates": "vault"}}, "/webhook/certificates"),
        ({"logs": {"format": "xml"}}, "/logs/format"),
        ({"backend": {"kai": {"enabled": False}}}, "'backend' not allowed"),
        ({"podgang": {"replicas": -1}}, "/podgang/replicas"),
        ({"nats": {"ca": "/etc/ssl/ca.pem"}}, "/nats/ca"),
        # By the templates: values that do not fit together.
        ({"nats": {"bundled": False}}, "nats.url: required"),
        ({"backends": {"volcano": {"enabled": True}}}, "backends.volcano: enabled, but"),
    ],
)
def test_values_that_cannot_work_are_refused_naming_the_value(
    values: dict[str, Any], named: str
) -> None:
    with pytest.raises(ChartRefused, match=re.escape(named)):
        chart(values)


def test_the_chart_lints_and_its_package_stands_alone(tmp_path: Path) -> None:
    """Packaged, the chart renders the same: it holds every file it reads."""
    linted = helm("lint", str(CHART), "--strict")
    assert linted.returncode == 0, linted.stdout + linted.stderr
    packaged = helm("package", str(CHART), "--destination", str(tmp_path))
    assert packaged.returncode == 0, packaged.stderr
    [package] = tmp_path.glob("gangway-*.tgz")
    assert chart(path=package) == chart()
