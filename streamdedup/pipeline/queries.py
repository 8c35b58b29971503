"""Query records -> answers (pure): is a story, or a modified part of one, in the index?

A query is a fingerprint record (``streamdedup fingerprint``, text-free or not) sent to the
query topic. Each gets exactly one answer, a JSON object keyed as the query:

- ``{"id", "found": false}``, or ``{"id", "found": true, "matched", "relation", "jaccard",
  "ld_similarity", "query_in_match", "match_in_query"}`` (``kafka.queries.reveal: yes_no``:
  ``found`` alone);
- ``{"error": ...}`` for a record that is no query (not a fingerprint record, made with other
  fingerprint settings, a dead letter) and for a client past its rate;
- ``{"params": ...}`` for a params announcement with the index's own settings (one with other
  settings gets an error naming them).

Answering never indexes the query and never changes a decision (``engine.query``).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Sequence

from streamdedup.errors import FingerprintRecordError, IncompatibleFingerprintError
from streamdedup.pipeline.fingerprints import KIND_DEAD, KIND_FINGERPRINT, DecodedFingerprints, FingerprintCodec

#: clients whose rate is tracked at once: a flood of made-up client names evicts the oldest
MAX_CLIENTS = 10_000
#: the longest client name kept (a longer header is cut)
MAX_CLIENT_NAME = 64
ANONYMOUS = "anonymous"
#: the longest error an answer carries (a reason can quote what the sender sent)
MAX_ERROR = 500


class RateLimit:
    """Per-client token buckets: ``rate`` queries a second, ``10 x rate`` at once."""

    def __init__(self, rate: float, clock: Callable[[], float]):
        self.rate, self.burst, self.clock = rate, 10.0 * rate, clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def allow(self, client: str) -> bool:
        now = self.clock()
        tokens, then = self._buckets.pop(client, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.rate)
        ok = tokens >= 1.0
        self._buckets[client] = (tokens - 1.0 if ok else tokens, now)
        if len(self._buckets) > MAX_CLIENTS:
            self._buckets.popitem(last=False)
        return ok


def client_name(header: bytes | None) -> str:
    if not header:
        return ANONYMOUS
    return header[:MAX_CLIENT_NAME].decode("utf-8", "replace")


class Answerer:
    """Answers query records with ``query(ids, batch, reveal) -> [Answer]`` (the engine's)."""

    def __init__(self, codec: FingerprintCodec, query: Callable, reveal: str, limit: RateLimit):
        self.codec, self.query, self.reveal, self.limit = codec, query, reveal, limit

    def answer(self, values: Sequence[bytes], clients: Sequence[str]) -> list[dict]:
        """One answer per value, in order."""
        out: list[dict | None] = [None] * len(values)
        asked = []
        for k, (value, client) in enumerate(zip(values, clients)):
            if not self.limit.allow(client):
                out[k] = {"error": f"client {client!r} is past its rate (kafka.queries.rate_per_client): ask again later"}
            else:
                asked.append(k)
        good, dec = self._decode([values[k] for k in asked], asked, out)
        if good:
            if dec is None:  # decoded one by one: the good ones together now
                dec = self.codec.decode([values[k] for k in good])
            answers = self.query(dec.ids, dec.batch, self.reveal)
            for k, a in zip(good, answers):
                out[k] = a.to_json()
        return out  # type: ignore[return-value]

    def _decode(self, values: list[bytes], where: list[int], out: list) -> tuple[list[int], DecodedFingerprints | None]:
        """The positions of the values that are fingerprint records, and their decoded batch when
        one decode read them all (None when a bad record made it go record by record); the
        others' errors into ``out``."""
        dec: DecodedFingerprints | None = None
        try:
            dec = self.codec.decode(values)
            checked = [(where[k], int(dec.kinds[k]), None) for k in range(len(values))]
        except Exception:  # noqa: BLE001 - one bad record among them: each on its own below
            checked = []
            for k, v in zip(where, values):
                try:
                    checked.append((k, int(self.codec.decode([v]).kinds[0]), None))
                except (FingerprintRecordError, IncompatibleFingerprintError) as exc:
                    why = str(exc).replace("fingerprint record 0", "the query")
                    checked.append((k, -1, why if len(why) <= MAX_ERROR else why[:MAX_ERROR] + "..."))
                except Exception as exc:  # noqa: BLE001 - a query is the sender's bytes: never the owner's crash
                    checked.append((k, -1, f"the query could not be read ({type(exc).__name__})"))
        good = []
        for k, kind, why in checked:
            if kind == KIND_FINGERPRINT:
                good.append(k)
            elif why is not None:
                out[k] = {"error": why}
            elif kind == KIND_DEAD:
                out[k] = {"error": "not a query: a dead-letter record (its story could not be read)"}
            else:  # a params announcement (`streamdedup fingerprint` sends one first) with this index's settings
                out[k] = {"params": "the fingerprint settings of this index"}
        return good, dec  # dec's fingerprints are the good ones, in order
