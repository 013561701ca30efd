"""The volcano backend: PodGang to a Volcano PodGroup in a queue, pod preparation and
validation over NATS."""
