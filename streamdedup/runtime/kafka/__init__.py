"""The Kafka plumbing every Kafka runtime shares (confluent-kafka): clients and their logs,
batches and the output guard, transactions and retries, start-up checks, metrics, queries, the
stall watchdog, and the staged topology's records and topic checks, which the staged and the
faust runtimes both speak. Not part of the pure core: imports the client."""
