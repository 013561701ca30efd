"""Service settings from the environment: levels in any case, and a bad value named, not a
traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gangway_contracts.errors import FieldErrors
from gangway_runtime.settings import (
    ConsumerSettings,
    ServiceSettings,
    from_environment,
    nats_servers,
)


@pytest.mark.parametrize("written", ["info", "Info", "INFO"])
def test_log_level_in_any_case(written: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GANGWAY_LOG_LEVEL", written)
    assert from_environment(ServiceSettings).log_level == "INFO"


def _started(service: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The service run with nothing but ``env``: it must stop at once, said in one line."""
    return subprocess.run(
        [sys.executable, "-m", service],
        env={**env, "PATH": ""},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize("service", ["gangway_watcher", "gangway_podgang", "gangway_backend_kai"])
def test_a_bad_setting_is_one_line_naming_the_variable(service: str) -> None:
    done = _started(
        service,
        {
            "GANGWAY_LOG_LEVEL": "loud",
            "GANGWAY_STREAMS__REPLICAS": "9",
            "GANGWAY_NATS_URL": "nats://a:4222,http://b",
        },
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr
    assert any(line.startswith("GANGWAY_LOG_LEVEL: ") for line in lines), lines
    assert any(line.startswith("GANGWAY_STREAMS__REPLICAS: ") for line in lines), lines
    named = 'GANGWAY_NATS_URL: "http://b" is not a NATS URL'
    assert any(line.startswith(named) for line in lines), lines


def test_an_otlp_protocol_not_supported_stops_the_service_in_one_line() -> None:
    done = _started(
        "gangway_watcher",
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
            "GANGWAY_HTTP_PORT": "0",
        },
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "cannot start: OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' is not supported" in (
        done.stderr
    )


@pytest.mark.parametrize(
    ("written", "servers"),
    [
        ("nats://a:4222", ["nats://a:4222"]),
        ("nats://a:4222,nats://b:4222", ["nats://a:4222", "nats://b:4222"]),
        (" tls://a:4222 , tls://b:4222 ,", ["tls://a:4222", "tls://b:4222"]),
    ],
)
def test_several_nats_servers_separated_by_commas(
    written: str, servers: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GANGWAY_NATS_URL", written)
    assert from_environment(ServiceSettings).nats_servers == servers


@pytest.mark.parametrize("written", ["", "a:4222", "nats://a:4222,http://b", "nats://"])
def test_a_bad_nats_url_names_the_one_at_fault(written: str) -> None:
    with pytest.raises(ValueError, match="NATS") as caught:
        nats_servers(written)
    if "http://b" in written:
        assert '"http://b" is not a NATS URL' in str(caught.value)


def environment(monkeypatch: pytest.MonkeyPatch, variables: dict[str, str]) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)


def test_every_bad_variable_is_named_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    environment(
        monkeypatch,
        {
            "GANGWAY_WORKERS": "0",
            "GANGWAY_STREAMS__STORAGE": "disk",
            "GANGWAY_HTTP_PORT": "eighty",
            "GANGWAY_NOT_A_SETTING": "ignored",
        },
    )
    with pytest.raises(FieldErrors) as caught:
        from_environment(ConsumerSettings)
    assert sorted(str(e) for e in caught.value.errors) == [
        "http_port: Input should be a valid integer, unable to parse string as an integer",
        "streams.storage: Input should be 'file' or 'memory'",
        "workers: Input should be greater than or equal to 1",
    ]


def test_values_are_read_as_their_fields_types(monkeypatch: pytest.MonkeyPatch) -> None:
    environment(
        monkeypatch,
        {
            "GANGWAY_KUBECONFIG": "/etc/kube/config",
            "GANGWAY_ACK_WAIT_SECONDS": "2.5",
            "GANGWAY_STREAMS__REPLICAS": "3",
            "GANGWAY_STREAMS__STORAGE": "Memory",
        },
    )
    settings = from_environment(ConsumerSettings)
    assert settings.kubeconfig == Path("/etc/kube/config")
    assert settings.ack_wait_seconds == 2.5
    assert (settings.streams.replicas, settings.streams.storage) == (3, "memory")


def test_a_password_is_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GANGWAY_NATS_PASSWORD", "hunter2")
    settings = from_environment(ServiceSettings)
    assert settings.nats_password is not None
    assert settings.nats_password.get_secret_value() == "hunter2"
    assert "hunter2" not in repr(settings)
    assert "hunter2" not in str(settings)


def test_values_given_as_their_types_are_taken_as_they_are() -> None:
    given = {"kubeconfig": Path("/k"), "nats_creds": "/c", "http_port": 0}
    settings = from_environment(ServiceSettings, given=given)
    assert (settings.kubeconfig, settings.nats_creds, settings.http_port) == (
        Path("/k"),
        Path("/c"),
        0,
    )
