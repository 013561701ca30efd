"""What a built-in backend's ``config`` is made of: strict, camelCase keys, unknown ones
refused; and the two shapes several backends share (a scheduler of its own name, one that
holds a gang's first pods for a while). Each backend's own model is in its package."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from gangway_contracts.k8s import is_dns_label


class Written(BaseModel):
    """Configuration as a person writes it: camelCase keys, unknown ones refused, read
    strictly (a quoted "false" is a mistake to report, not a string to coerce)."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", strict=True, alias_generator=to_camel, populate_by_name=True
    )


class BackendConfig(Written):
    """A built-in backend's ``config``."""


class NamedSchedulerConfig(BackendConfig):
    """A backend whose scheduler runs beside the default one under a name of its own."""

    # The scheduler (profile) its pods are handed to.
    scheduler_name: str

    @field_validator("scheduler_name")
    @classmethod
    def _scheduler_name(cls, value: str) -> str:
        if not is_dns_label(value):
            raise ValueError("must be a DNS-1123 label: the pods' schedulerName")
        return value


class SecondSchedulerConfig(NamedSchedulerConfig):
    """A second scheduler that holds a gang's first pods for a while waiting for the rest."""

    # How long a gang's first placed pods wait for the rest before all are released and
    # retried; unset: the scheduler's own default.
    schedule_timeout_seconds: Annotated[int, Field(ge=1, le=2**31 - 1)] | None = None
