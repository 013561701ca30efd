"""Request/reply payloads every backend serves: prepare-pods and validate; and the one
podgang serves to admission: dry-run-pods.

A backend is any process that answers these on its subjects
(:meth:`gangway_contracts.subjects.Subjects.backend`); nothing else binds it to Gangway.
"""

from __future__ import annotations

from typing import Any, Literal

from gangway_contracts.errors import FieldError
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.k8s import Wire

# --- prepare-pods: one request per PodGang, all of its missing pods at once ---------------


class PreparePodsRequest(Wire, frozen=True, kw_only=True):
    """Pods the podgang service is about to create for one PodGang, as full manifests."""

    podgang: PodGang
    pods: list[dict[str, Any]]


class PodsPrepared(Wire, frozen=True, kw_only=True, tag_field="result", tag="prepared"):
    """The same pods, in the same order, with the backend's fields set."""

    pods: list[dict[str, Any]]


class PreparePodsFailed(Wire, frozen=True, kw_only=True, tag_field="result", tag="failed"):
    reason: str
    message: str
    errors: list[FieldError] = []


PreparePodsReply = PodsPrepared | PreparePodsFailed


# --- validate: admission asks the chosen backend about one PodCliqueSet ---------------------


class ValidateRequest(Wire, frozen=True, kw_only=True):
    operation: Literal["CREATE", "UPDATE"]
    podcliqueset: PodCliqueSet
    old: PodCliqueSet | None = None


class UnsupportedFeature(Wire, frozen=True, kw_only=True):
    """A feature the backend admits but cannot honour; becomes a PodCliqueSet condition."""

    field: str
    feature: str
    message: str


class ValidateReply(Wire, frozen=True, kw_only=True):
    allowed: bool
    errors: list[FieldError] = []
    warnings: list[str] = []
    unsupported: list[UnsupportedFeature] = []


# --- dry-run-pods: admission asks podgang whether the API server would take the pods -------


class DryRunPodsRequest(Wire, frozen=True, kw_only=True):
    """A PodCliqueSet about to be admitted: podgang makes one pod of each clique as it
    would, and the API server validates it without storing it (``dryRun=All``)."""

    podcliqueset: PodCliqueSet


class DryRunPodsReply(Wire, frozen=True, kw_only=True):
    """The API server's refusals, each at the PodCliqueSet field it comes from; warnings:
    what could not be checked (a quota full now is no reason to refuse)."""

    errors: list[FieldError] = []
    warnings: list[str] = []
