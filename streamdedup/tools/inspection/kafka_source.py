"""Duplicates of a Kafka run: its duplicates topic, read_committed, paged by partition and offset.

An original is fetched from the *input* topic at the position its copy's tags name
(``dedup.original``: ``topic:partition:offset``; likewise ``dedup.matched_source``): one assign
and seek, read_committed, and its id is checked against ``dedup.duplicate_of``. Records written
before those tags existed carry only ids; such an original is looked for among the last
``lookup_window`` records of each partition of the unique topic (roots) and the duplicates topic
(a matched document can be a copy itself), and the reason says where it looked when it is not
there: a bounded search, never a scan of a whole topic.

The reader's consumer joins no group and commits nothing (it assigns partitions itself); its
librdkafka settings are the config's (``kafka.librdkafka``: SASL, TLS, ...).
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from typing import Sequence

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from streamdedup.config import Config
from streamdedup.errors import InspectError
from streamdedup.runtime.kafka.clientlog import client_settings
from streamdedup.tools.inspection.kafka_counts import RecordCounter
from streamdedup.tools.inspection.kafka_tail import tail
from streamdedup.tools.inspection.overview import Recent
from streamdedup.pipeline.route import DUPLICATE_DEST, OUTPUTS, output_topics
from streamdedup.pipeline.tags import parse_headers
from streamdedup.tools.inspection.pair import Doc
from streamdedup.runtime.since import parse_since
from streamdedup.tools.inspection.reader import Cursor, DocDecoder, Entry, Filter, Page, Wanted, newest

#: one consume call's wait: it returns at this timeout unless 500 records came sooner, so a short
#: page (or the end of a partition) costs a few of these, not a long wait
_WAIT_S = 0.02
#: fetched documents kept (the web inspector shows the same pairs again)
CACHE_SIZE = 2048


def _position(position: str) -> tuple[str, int, int] | None:
    """``topic:partition:offset`` split, or None (topic names cannot contain ``:``)."""
    parts = position.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdecimal() or not parts[2].isdecimal():
        return None
    return parts[0], int(parts[1]), int(parts[2])


class KafkaDuplicates:
    """A duplicates topic as a :class:`~.reader.DuplicateSource`.

    Args:
        topic: the duplicates topic (default ``kafka.duplicates_topic``).
        timeout_s: how long one read or fetch may wait for the broker.
        lookup_window: records per partition searched for an original by id (see module doc).
    """

    #: whether the last totals() counted every record (see :mod:`.kafka_counts`); False when
    #: a read ran out of its time budget and the rest was counted as offsets
    totals_exact = True
    time_meaning = "when each record was decided (its Kafka timestamp)"

    def __init__(self, cfg: Config, topic: str | None = None, timeout_s: float = 15.0, lookup_window: int = 10_000):
        self.cfg = cfg
        self.topic = topic or cfg.kafka.duplicates_topic
        self.timeout_s = timeout_s
        self.lookup_window = lookup_window
        self.decode = DocDecoder(cfg)
        self.consumer = Consumer(client_settings(cfg.kafka, {
            "group.id": f"streamdedup-inspect-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
            "isolation.level": "read_committed", "auto.offset.reset": "earliest", "enable.partition.eof": True,
            # the end of a partition is seen when a fetch comes back empty: the broker holds an
            # empty fetch this long (default 500 ms, paid by every page and every fetched original)
            "fetch.wait.max.ms": 20}))
        self.partitions = self._partitions(self.topic)
        self._cache: OrderedDict[Wanted, Doc | str] = OrderedDict()
        self._counts: RecordCounter | None = None

    def _partitions(self, topic: str) -> list[int]:
        try:
            meta = self.consumer.list_topics(topic, timeout=self.timeout_s).topics.get(topic)
        except KafkaException as exc:
            raise InspectError(f"cannot reach {self.cfg.kafka.bootstrap_servers}: {exc}") from None
        if meta is None or meta.error is not None or not meta.partitions:
            why = meta.error.str() if meta is not None and meta.error is not None else "no partitions"
            raise InspectError(f"topic {topic} cannot be read on {self.cfg.kafka.bootstrap_servers}: {why}")
        return sorted(meta.partitions)

    def watermarks(self, topic: str | None = None, partitions: Sequence[int] | None = None) -> dict[int, tuple[int, int]]:
        """partition -> (low, high) offsets, asked of the broker now."""
        topic = topic or self.topic
        parts = self.partitions if partitions is None else partitions
        return {p: self.consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=self.timeout_s, cached=False)
                for p in parts}

    def start(self, since: str | None) -> Cursor:
        wm = self.watermarks()
        if since is None:
            return {p: lo for p, (lo, _) in wm.items()}
        s = parse_since(since)
        if s.kind != "time":
            return {p: s.start(lo, hi) for p, (lo, hi) in wm.items()}
        return self._offsets_at(s.value, wm)

    def _offsets_at(self, ms: int, wm: dict[int, tuple[int, int]]) -> Cursor:
        found = self.consumer.offsets_for_times([TopicPartition(self.topic, p, ms) for p in self.partitions],
                                                timeout=self.timeout_s)
        # -1: no record at or after that time in the partition
        return {tp.partition: tp.offset if tp.offset >= 0 else wm[tp.partition][1] for tp in found}

    def read(self, start: Cursor, limit: int, filt: Filter, max_scan: int = 100_000) -> Page:
        wm = self.watermarks()
        return self._scan(self.topic, start, {p: hi for p, (_, hi) in wm.items()}, limit, filt, max_scan, wm)

    def latest(self, limit: int, filt: Filter, max_scan: int = 100_000) -> Page:
        wm = self.watermarks()
        page = self._older(None, limit, filt, max_scan, wm)
        return Page(page.entries, {p: hi for p, (_, hi) in wm.items()}, page.scanned, at_end=True)

    def older(self, before: Cursor | None, limit: int, filt: Filter, max_scan: int = 100_000) -> Page:
        return self._older(before, limit, filt, max_scan, self.watermarks())

    def _older(self, before: Cursor | None, limit: int, filt: Filter, max_scan: int, wm: dict[int, tuple[int, int]]) -> Page:
        """Reads windows backwards from ``before``, doubling them, until ``limit`` accepted."""
        stop = {p: hi if before is None else min(max(before.get(p, hi), lo), hi) for p, (lo, hi) in wm.items()}
        found: list[Entry] = []
        scanned, window = 0, max(limit, 100)
        while len(found) < limit and scanned < max_scan and any(stop[p] > wm[p][0] for p in stop):
            # a window fits in what is left of max_scan, so each is read whole: a partly read
            # one would leave a gap between its found records and the ones after it
            per = max(1, min(window, (max_scan - scanned) // len(stop)))
            begin = {p: max(wm[p][0], stop[p] - per) for p in stop}
            page = self._scan(self.topic, begin, stop, max_scan, filt, max_scan, wm)
            if not page.at_end:
                raise InspectError(f"reading {self.topic}: no answer from the broker in {self.timeout_s:g} s")
            found = page.entries + found
            scanned += page.scanned
            stop, window = begin, window * 2
        kept, start = newest(found, limit, stop)
        return Page(kept, start, scanned, all(start[p] <= wm[p][0] for p in start))

    def entry_at(self, partition: int, offset: int) -> Entry | None:
        if partition not in self.partitions:
            return None
        wm = self.watermarks(partitions=[partition])
        if not wm[partition][0] <= offset < wm[partition][1]:
            return None
        page = self._scan(self.topic, {partition: offset}, {partition: offset + 1}, 1, None, 1, wm)
        return next((e for e in page.entries if e.offset == offset), None)

    def totals(self) -> dict[str, int | None]:
        """Committed records per output, read (incrementally: only what was added since the last
        call; :mod:`.kafka_counts`)."""
        out: dict[str, int | None] = {}
        exact = True
        deadline = self._counter().deadline()  # one budget for the page, not one per topic
        # every output the run writes (the revisions topic under verify.revisions: topic: without
        # it the totals fall short of the input)
        outputs = {**output_topics(self.cfg), DUPLICATE_DEST: self.topic}
        for status, topic in outputs.items():
            meta = self.consumer.list_topics(topic, timeout=self.timeout_s).topics.get(topic)
            if meta is None or meta.error is not None or not meta.partitions:
                out[status] = None
                continue
            counted = self._counter().count(topic, sorted(meta.partitions), deadline)
            out[status] = counted.records
            exact = exact and counted.exact
        self.totals_exact = exact
        return out

    def recent(self, output: str, limit: int) -> Recent:
        """The last ``limit`` records of an output topic (``unique``, ``duplicate``,
        ``dead_letter``, ``revision``: the revisions topic): tags and timestamps only
        (:mod:`.kafka_tail`); empty when the topic does not exist."""
        topic = self.topic if output == DUPLICATE_DEST else next(o.topic(self.cfg.kafka) for o in OUTPUTS if o.dest == output)
        meta = self.consumer.list_topics(topic, timeout=self.timeout_s).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            return Recent(output)
        return tail(self.consumer, topic, sorted(meta.partitions), limit, output, self.timeout_s)

    def _counter(self) -> RecordCounter:
        if self._counts is None:
            self._counts = RecordCounter(self.consumer, self.timeout_s)
        return self._counts

    def _scan(self, topic: str, start: Cursor, stop: Cursor, limit: int, filt: Filter | None, max_scan: int,
              wm: dict[int, tuple[int, int]]) -> Page:
        """Records ``[start, stop)`` of each partition of ``topic`` (as entries; only accepted
        ones), until ``limit`` accepted or ``max_scan`` read; ``next`` is where it stopped."""
        pos = {p: max(start.get(p, wm[p][0]), wm[p][0]) for p in wm}
        active = {p for p in wm if pos[p] < stop[p]}
        out: list[Entry] = []
        scanned = 0
        if active:
            self.consumer.assign([TopicPartition(topic, p, pos[p]) for p in sorted(active)])
        deadline = time.monotonic() + self.timeout_s
        while active and len(out) < limit and scanned < max_scan and time.monotonic() < deadline:
            msgs = self.consumer.consume(500, _WAIT_S)
            if msgs:  # the time limit is for silence: a long read that makes progress goes on
                deadline = time.monotonic() + self.timeout_s
            for m in msgs:
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        active.discard(m.partition())
                        continue
                    raise InspectError(f"reading {topic}: {err.str()}")
                p = m.partition()
                if m.topic() != topic:
                    continue  # fetched for an earlier assignment
                if p not in active or m.offset() >= stop[p]:
                    active.discard(p)
                    continue
                pos[p] = m.offset() + 1
                scanned += 1
                e = self._entry(m)
                if e is not None and (filt is None or filt.accepts(e)):
                    out.append(e)
                if pos[p] >= stop[p]:
                    active.discard(p)
                if len(out) >= limit or scanned >= max_scan:
                    break
        if self.consumer.assignment():
            self.consumer.unassign()
        return Page(out, pos, scanned, not active)

    def _entry(self, m) -> Entry | None:
        tags = parse_headers(m.headers())
        if tags is None:
            return None  # not one of our records
        position = f"{m.topic()}:{m.partition()}:{m.offset()}"
        ts_type, ts = m.timestamp()
        value = m.value()
        doc = self.decode(value, position, ts if ts_type else None) if value is not None else f"{position}: no value"
        return Entry(m.partition(), m.offset(), tags, doc)

    def fetch(self, wanted: Sequence[Wanted]) -> dict[Wanted, Doc | str]:
        out: dict[Wanted, Doc | str] = {}
        by_id: list[Wanted] = []
        for w in wanted:
            if w in self._cache:
                out[w] = self._cache[w]
            elif w.position and _position(w.position):
                out[w] = self._at(w)
            elif w.id is not None:
                by_id.append(w)
            else:
                out[w] = "no id or input position in the tags"
        if by_id:
            out.update(self._search(by_id))
        for w in wanted:
            self._cache[w] = out[w]
            self._cache.move_to_end(w)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return out

    def _at(self, w: Wanted) -> Doc | str:
        topic, p, offset = _position(w.position)  # type: ignore[misc]
        if offset >= 2**63 or p >= 2**31:
            return f"original not found: {w.position} is no Kafka position"
        try:
            lo, hi = self.consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=self.timeout_s, cached=False)
        except KafkaException as exc:  # a tag naming a topic or partition that does not exist
            return f"original not found: {w.position} ({exc.args[0].str()})"
        if not lo <= offset < hi:
            why = "deleted by retention" if offset < lo else "not written yet"
            return f"{w.position} is outside {topic}[{p}]'s offsets {lo}..{hi - 1} ({why})"
        return self._decode_at(topic, p, offset, w)

    def _decode_at(self, topic: str, p: int, offset: int, w: Wanted) -> Doc | str:
        self.consumer.assign([TopicPartition(topic, p, offset)])
        deadline = time.monotonic() + self.timeout_s
        try:
            while time.monotonic() < deadline:
                for m in self.consumer.consume(1, 0.2):
                    if m.topic() != topic or m.partition() != p:
                        continue
                    if m.error() is None and m.offset() == offset:
                        ts_type, ts = m.timestamp()
                        doc = self.decode(m.value() or b"", w.position, ts if ts_type else None)
                        if isinstance(doc, Doc) and w.id is not None and doc.id != w.id:
                            return f"{w.position} holds id {doc.id}, not {w.id}"
                        return doc
                    if m.error() is None or m.error().code() == KafkaError._PARTITION_EOF:
                        return f"{w.position} is not readable (an aborted transaction's record, or compacted away)"
            return f"{w.position}: no answer from the broker in {self.timeout_s:g} s"
        finally:
            self.consumer.unassign()

    def _search(self, wanted: list[Wanted]) -> dict[Wanted, Doc | str]:
        """Originals by id in the last ``lookup_window`` records of the unique and duplicates topics."""
        want = {w.id: w for w in wanted}
        found: dict[Wanted, Doc | str] = {}
        searched = []
        for topic in (self.cfg.kafka.unique_topic, self.topic):
            if len(found) == len(want):
                break
            try:
                parts = self._partitions(topic)
            except InspectError as exc:
                searched.append(str(exc))
                continue
            wm = self.watermarks(topic, parts)
            begin = {p: max(lo, hi - self.lookup_window) for p, (lo, hi) in wm.items()}
            for doc in self._scan_docs(topic, begin, {p: hi for p, (_, hi) in wm.items()}):
                w = want.get(doc.id)
                if w is not None and w not in found:
                    found[w] = doc
            searched.append(topic)
        hint = (f"not among the last {self.lookup_window} records of each partition of {' and '.join(searched)} "
                "(the copy has no dedup.original position: written before it existed; --lookup-window searches further)")
        return {w: found.get(w, hint) for w in wanted}

    def _scan_docs(self, topic: str, begin: Cursor, stop: Cursor) -> list[Doc]:
        """Every decodable record of ``[begin, stop)``: tags or not (a root on the unique topic)."""
        docs: list[Doc] = []
        active = {p for p in begin if begin[p] < stop[p]}
        if not active:
            return docs
        self.consumer.assign([TopicPartition(topic, p, begin[p]) for p in sorted(active)])
        deadline = time.monotonic() + self.timeout_s
        try:
            while active and time.monotonic() < deadline:
                for m in self.consumer.consume(500, _WAIT_S):
                    err, p = m.error(), m.partition()
                    if err is not None or m.offset() >= stop[p] - 1:
                        active.discard(p)
                    if err is None and m.offset() < stop[p]:
                        doc = self.decode(m.value() or b"", f"{topic}:{p}:{m.offset()}", m.timestamp()[1])
                        if isinstance(doc, Doc):
                            docs.append(doc)
        finally:
            self.consumer.unassign()
        return docs

    def close(self) -> None:
        self.consumer.close()
