"""Kafka runtime (confluent-kafka). Not part of the pure core: imports the client."""
