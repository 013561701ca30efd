"""The admission service's settings: the runtime's, plus the webhook's listener and limits."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from gangway_runtime.settings import LimitSettings, Port, Seconds


class AdmissionSettings(LimitSettings):
    webhook_host: str = "0.0.0.0"
    webhook_port: Port = 8443
    # The serving certificate and key (PEM), re-read when either file changes, as
    # cert-manager and kubelet secret updates rewrite them in place.
    tls_cert_file: Path
    tls_key_file: Path
    tls_reload_seconds: Seconds = 10.0
    # A backend not answering within this is unavailable for this review.
    backend_timeout_seconds: Seconds = 3.0
    # podgang not answering the dry run of the pods within this: the same. Longer: its
    # loop also builds every workload's objects, and with 10 000 PodCliqueSets submitted
    # at once beside four of 10 000 replicas, 3 s refused some (bench/RESULTS.md); asked
    # beside the backend, so it may take the review's time less a second.
    dry_run_timeout_seconds: Seconds = 7.0
    # Every review is answered within this, whatever happens; keep it under the
    # ValidatingWebhookConfiguration's timeoutSeconds (10 in deploy/).
    review_timeout_seconds: Seconds = 8.0
    # Fail: a PodCliqueSet whose backend (or podgang, for the dry run of its pods) does not
    # answer is rejected, naming who. Ignore: admitted with a warning, those checks skipped.
    failure_policy: Literal["Fail", "Ignore"] = "Fail"
    # Ask podgang to dry-run one pod of each clique (on create, and on an update that
    # changes a clique): what the API server would refuse is refused here, naming the field.
    dry_run_pods: bool = True
    # Bodies above this are refused (413) before they are read: an AdmissionReview holds
    # the object and, on update, its old version; etcd stores at most 1.5 MiB of each.
    max_request_bytes: Annotated[int, Field(ge=64 << 10)] = 4 << 20
