"""Runnable wiring of the library onto Kafka: one factory per topology, no module-level apps."""
