"""Settings for the whole suite."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# CI machines have 2 cores shared with a control plane: judge properties, not speed.
settings.register_profile(
    "ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=200
)
settings.register_profile("dev", deadline=None, max_examples=100)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
