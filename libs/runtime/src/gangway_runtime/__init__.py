"""The runtime kit every Gangway service runs on.

Settings from the environment, one NATS connection with stream provisioning, a small
Kubernetes resource client, /healthz, /readyz and /metrics, OpenTelemetry tracing, and a
``run()`` that owns every background task and stops them cleanly on SIGTERM.
"""
