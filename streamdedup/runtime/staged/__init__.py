"""The staged topology: parallel fingerprint workers, one sequenced decider, routers.

Status: being built. This docstring is the design. Built: ``worker`` and ``decider`` (run with
``streamdedup run --topology staged --role worker|decider``), ``pending`` (a worker's records
waiting for decisions), ``recent`` (the decider's memory of decided input positions). What the
decider sends a worker (``kafka.decision_record``), the workers' fingerprinting
(``kafka.fingerprinting``) and the partition map and checks (``kafka.staged_topics``) are in the
shared Kafka plumbing: the faust runtime speaks them too.

Why: the per-record work that parallelises (decode, canonicalise, fingerprint: ~7.5 us for a
1 KB story, ~650 us for a 50 KB page) outgrows one process long before the index does; the
global part (candidates, verification, decision: ~3 us in the decide kernel) needs only the
fingerprint. So the text is fingerprinted where it is read, and one owner of the index decides
on fingerprints in one agreed order.

Stages and topics (Kafka's own primitives only: groups, partitions, transactions):

- **worker** = fingerprint + route, one consumer group over the input topics (scale = input
  partitions). Per consumed batch: prepare (dead letters sorted out, same reasons as every
  runtime), fingerprint, produce one *fingerprint record* per input record (no text; a dead
  letter travels as a dead fingerprint carrying stage and reason) to ``kafka.staged
  .fingerprints_topic`` with an idempotent producer, and keep the records pending. The same
  worker consumes the decisions of its own input partitions (``decisions_topic`` partition i
  holds the decisions of input partition i, numbered over ``kafka.input_topics`` in order) and,
  once a prefix of a partition's pending records is decided, produces those records unchanged
  with their tags to unique / duplicates / dead-letter in a transaction that also commits the
  input offsets and the decisions offsets (under the workers' group). So an input record
  costs three messages: fingerprint, decision, output.
- **decider**: one active owner of the index (the RocksDB lock on its state directory; a
  standby with the same directory waits and takes over, as the single-index processor does).
  It reads the one-partition fingerprints topic in its order, which is the order that defines
  "first seen", runs the engine's decide step on fingerprints only, and produces one decision
  per fingerprint keyed to the input partition's decisions partition. Its state commit holds
  the fingerprints-topic position, so a restart resumes where the state ends; decisions whose
  delivery was not confirmed before a crash are produced again from the state (idempotent for
  the workers, see below).

Why duplicates of messages are harmless: a worker takes, per input partition, the first
decision for the offset it waits for and skips any decision for an offset below it. A worker
that crashes re-reads its input from the committed offsets and sends those fingerprints again;
the decider recognises a fingerprint whose input position it has decided (recent positions
per input partition, rebuilt from the state on start) and answers with the stored decision,
not a new one, so the index never holds a record twice and the answer is the first one.

Ordering and identity: on a one-partition input the fingerprints log is the input order, so
the decisions equal the single-index processor's. With several input partitions, which of two
simultaneous copies on different partitions is "first" is the order their fingerprints reach
the log; that order is fixed once written, so every replay and every router agrees on it, and
each pair gives exactly one unique and one duplicate.

Sharding the index (when one decider's memory is not enough) is a design with a simulation,
not built yet: see ``benchmarks/SHARDING.md``.
"""
