"""How a Kafka runtime makes its clients: confluent-kafka's, or fakes a test passes (the single
processor, the staged worker and the decider take the same factory)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient


@dataclass
class Clients:
    """Makers of the consumer, the producer and the admin client, each from its settings."""

    consumer: Callable[[dict], object] = Consumer
    producer: Callable[[dict], object] = Producer
    admin: Callable[[dict], object] = AdminClient
