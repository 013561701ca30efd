"""What ``gangway up`` decides before it starts anything."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from cryptography import x509

from gangway_cli.cluster import Found
from gangway_cli.main import build_parser
from gangway_cli.up import DEFAULT_NODES, LocalWebhook, default_config, node_pool
from gangway_cli.up import run as up_run
from gangway_contracts.config import parse_scheduler_config
from gangway_localcluster.certs import ServingFiles


def found(workload_api: str | None, kai: bool, second: bool = False) -> Found:
    """``second``: the second schedulers' PodGroups (Coscheduling, Koordinator, Volcano)."""
    served = {"kai-scheduler"} if kai else set()
    served |= {"coscheduling", "koordinator", "volcano"} if second else set()
    return Found("https://example:6443", "v1.36.4", [], frozenset(served), workload_api, None)


@pytest.mark.parametrize(
    ("workload_api", "kai", "second", "enabled", "gang"),
    [
        (
            "v1alpha2",
            True,
            True,
            ["coscheduling", "default-scheduler", "kai-scheduler", "koordinator", "volcano"],
            True,
        ),
        ("v1alpha1", False, False, ["default-scheduler"], True),
        (None, True, False, ["default-scheduler", "kai-scheduler"], False),
        (
            None,
            False,
            True,
            ["coscheduling", "default-scheduler", "koordinator", "volcano"],
            False,
        ),
    ],
)
def test_the_default_configuration_follows_what_the_cluster_serves(
    workload_api: str | None, kai: bool, second: bool, enabled: list[str], gang: bool
) -> None:
    served = found(workload_api, kai, second)
    config = parse_scheduler_config(default_config(served)["scheduler"])
    assert sorted(config.enabled) == enabled
    assert config.default == "default-scheduler"
    assert config.profiles["default-scheduler"].config.gang_scheduling is gang  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("host", "bind", "url"),
    [
        ("127.0.0.1", "127.0.0.1", "https://127.0.0.1:9443/"),
        ("localhost", "127.0.0.1", "https://localhost:9443/"),
        ("10.1.2.3", "0.0.0.0", "https://10.1.2.3:9443/"),
        ("fd00::7", "0.0.0.0", "https://[fd00::7]:9443/"),
        ("dev.example.com", "0.0.0.0", "https://dev.example.com:9443/"),
    ],
)
def test_the_webhook_listens_where_the_api_server_can_call_it(
    host: str, bind: str, url: str
) -> None:
    webhook = LocalWebhook(host, 9443, ServingFiles(Path("ca"), Path("crt"), Path("key")))
    assert webhook.settings["GANGWAY_WEBHOOK_HOST"] == bind
    assert webhook.url.startswith(url)


def test_the_webhook_certificate_names_the_host(tmp_path: Path) -> None:
    webhook = LocalWebhook.make(tmp_path, "dev.example.com")
    cert = x509.load_pem_x509_certificate(webhook.files.cert.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["dev.example.com"]


def test_local_nodes_come_from_the_flags() -> None:
    args = parse(["up", "--nodes", "6", "--node-gpus", "4"])
    pool = node_pool(args)
    assert (pool.count, pool.gpus, pool.cpu) == (6, 4, DEFAULT_NODES.cpu)
    assert node_pool(parse(["up"])).count == DEFAULT_NODES.count


def test_negative_nodes_are_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse(["up", "--nodes", "-1"])
    assert "--nodes: must be >= 0" in capsys.readouterr().err


def test_nodes_are_for_the_local_cluster_only(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse(["up", "--kubeconfig", "k", "--nodes", "2"])
    assert up_run(args) == 2
    assert "--nodes is for the local cluster" in capsys.readouterr().err


def parse(argv: list[str]) -> argparse.Namespace:
    return build_parser(argv).parse_args(argv)
