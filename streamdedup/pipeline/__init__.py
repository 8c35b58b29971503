"""One pipeline for every runtime: prepare -> fingerprint -> decide -> route (pure, runtime-neutral).

- :mod:`.prepare`: raw records (a scan of JSONL lines or Kafka values) -> dead letters with
  stage and reason, and the engine's columns for the rest.
- :mod:`.decide`: fingerprint (texts -> a :class:`~streamdedup.sketch.fingerprint.FingerprintBatch`)
  then decide (:meth:`streamdedup.engine.deduplicator.Deduplicator.run_fingerprinted`, one
  checkpoint per micro-batch).
- :mod:`.route`: decisions -> destination (unique, duplicate, dead_letter; revision under
  ``verify.revisions: topic``) and tags per record.
- :mod:`.fingerprints`: the record a fingerprint worker sends the decider when prepare and
  decide run in different processes (a staged topology), and :func:`~.fingerprints.decide`.
- :mod:`.tags`: the one encoding of the tags (Kafka headers, file mode's ``_dedup``) and its parsing.

File mode (``streamdedup.runtime.filemode``) and the Kafka runtime (``streamdedup.runtime.kafka``) call these
and add only their I/O.
"""

from streamdedup.pipeline.prepare import Prepared, Preparer
from streamdedup.pipeline.route import (DEAD_LETTER_DEST, DESTINATIONS, DUPLICATE_DEST, REVISION_DEST, UNIQUE_DEST, Routed,
                                        output_topics, route)

__all__ = ["DEAD_LETTER_DEST", "DESTINATIONS", "DUPLICATE_DEST", "REVISION_DEST", "UNIQUE_DEST", "Prepared", "Preparer",
           "Routed", "output_topics", "route"]
