"""The coscheduling backend: PodGang to scheduler-plugins' Coscheduling PodGroup, pod
preparation and validation over NATS."""
