"""Duplicates of a file-mode run: its output directory (``duplicates.jsonl`` and ``unique.jsonl``).

``duplicates.jsonl`` is one partition (0) whose offsets are its 0-based line numbers. An
original is fetched by its input position (``line:N``) from the input file when it is given
(the exact record the engine saw; its id is checked), otherwise by id from ``unique.jsonl``
(roots), ``duplicates.jsonl`` and ``revisions.jsonl`` when there is one (a matched document
can itself be a copy or a revision): the id map is built on the first lookup, one pass over
the files, and kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import orjson

from streamdedup.config import Config
from streamdedup.errors import InspectError
from streamdedup.pipeline.tags import parse_file_tags
from streamdedup.tools.inspection.overview import Recent
from streamdedup.tools.inspection.pair import Doc
from streamdedup.runtime.since import parse_since
from streamdedup.tools.inspection.reader import Cursor, DocDecoder, Entry, Filter, Page, Wanted

_CHUNK = 8 << 20


class LineIndex:
    """Byte offsets of a (growing) file's complete lines, extended by :meth:`refresh`: reading
    line i is one seek, and a page never reads the lines before it."""

    def __init__(self, path: Path):
        self.path = path
        self.f = open(path, "rb")
        self._starts: list[np.ndarray] = [np.zeros(1, np.int64)]
        self._flat: np.ndarray | None = None
        self._indexed = 0  # bytes up to the end of the last complete line

    def refresh(self) -> int:
        """Index lines appended since the last call; returns the number of complete lines."""
        self.f.seek(self._indexed)
        base = self._indexed
        while chunk := self.f.read(_CHUNK):
            nl = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10)
            if nl.size:
                self._starts.append(nl.astype(np.int64) + base + 1)
                self._indexed = base + int(nl[-1]) + 1
            base += len(chunk)
        self._flat = None
        return len(self)

    @property
    def starts(self) -> np.ndarray:
        if self._flat is None:
            self._flat = np.concatenate(self._starts)
        return self._flat

    def __len__(self) -> int:
        return self.starts.shape[0] - 1

    def line(self, i: int) -> bytes:
        s = self.starts
        self.f.seek(int(s[i]))
        return self.f.read(int(s[i + 1] - s[i])).rstrip(b"\r\n")

    def close(self) -> None:
        self.f.close()


class FileDuplicates:
    """A file-mode output directory as a :class:`~.reader.DuplicateSource`.

    Args:
        out_dir: the run's output directory.
        input_path: the input file of the run, to fetch originals by their ``line:N`` position.
    """

    #: totals() counts records (lines)
    totals_exact = True
    time_meaning = "the records' event time (input.time_field)"

    def __init__(self, out_dir: str | Path, cfg: Config, input_path: str | Path | None = None):
        out = Path(out_dir)
        self.dup_path, self.unique_path = out / "duplicates.jsonl", out / "unique.jsonl"
        self.revisions_path = out / "revisions.jsonl"  # verify.revisions: topic
        if not self.dup_path.is_file():
            raise InspectError(f"{out} holds no duplicates.jsonl: is it a file-mode output directory?")
        self.cfg = cfg
        self.text_output = cfg.input.format == "text"  # outputs of text input are {"id", "text"} objects
        self.decode = DocDecoder(cfg)
        self.dups = LineIndex(self.dup_path)
        self.input = None
        if input_path is not None:
            if not Path(input_path).is_file():
                raise InspectError(f"input file {input_path} not found")
            self.input = LineIndex(Path(input_path))
        self._ids: dict[str, tuple[LineIndex, int]] | None = None
        self._opened: list[LineIndex] = []
        self._counted: dict[str, LineIndex] = {}

    def start(self, since: str | None) -> Cursor:
        if since is None:
            return {0: 0}
        s = parse_since(since)
        n = self.dups.refresh()
        if s.kind != "time":
            return {0: s.start(0, n)}
        if self.cfg.input.time_field is None:
            raise InspectError("--since TIME in file mode needs input.time_field (outputs carry no other time)")
        return {0: 0}  # the caller filters by time (Filter.since_ms): event times are not in order

    def _entry(self, i: int) -> Entry:
        line = self.dups.line(i)
        position = f"duplicates.jsonl:{i + 1}"
        obj = orjson.loads(line)
        tags = parse_file_tags(obj)
        if self.text_output:
            doc: Doc | str = Doc(str(obj.get("id")), str(obj.get("text", "")), position)
        else:
            doc = self.decode(line, position)
        return Entry(0, i, tags, doc)

    def read(self, start: Cursor, limit: int, filt: Filter, max_scan: int = 100_000) -> Page:
        n = self.dups.refresh()
        i = start.get(0, 0)
        out: list[Entry] = []
        scanned = 0
        while i < n and len(out) < limit and scanned < max_scan:
            e = self._entry(i)
            i += 1
            scanned += 1
            if filt.accepts(e):
                out.append(e)
        return Page(out, {0: i}, scanned, i >= n)

    def latest(self, limit: int, filt: Filter, max_scan: int = 100_000) -> Page:
        page = self.older(None, limit, filt, max_scan)
        return Page(page.entries, {0: len(self.dups)}, page.scanned, at_end=True)

    def older(self, before: Cursor | None, limit: int, filt: Filter, max_scan: int = 100_000) -> Page:
        n = self.dups.refresh()
        stop = n if before is None else min(max(before.get(0, n), 0), n)
        out: list[Entry] = []
        i = stop
        while i > 0 and len(out) < limit and stop - i < max_scan:
            i -= 1
            e = self._entry(i)
            if filt.accepts(e):
                out.append(e)
        return Page(out[::-1], {0: i}, stop - i, i == 0)

    def entry_at(self, partition: int, offset: int) -> Entry | None:
        if partition != 0 or not 0 <= offset < self.dups.refresh():
            return None
        return self._entry(offset)

    def totals(self) -> dict[str, int | None]:
        out: dict[str, int | None] = {"duplicate": self.dups.refresh()}
        files = {"unique": "unique", "dead_letter": "dead_letter"}
        if self.cfg.verify.revisions == "topic":  # a fourth output: without it the totals fall short of the input
            files["revision"] = "revisions"
        for output, name in files.items():
            index = self._index(name)
            out[output] = None if index is None else index.refresh()
        return out

    def recent(self, output: str, limit: int) -> Recent:
        """The last ``limit`` lines of an output (``unique``, ``duplicate``, ``dead_letter``,
        ``revision``: revisions.jsonl): their tags, and their event times when the run has
        ``input.time_field``."""
        index = self.dups if output == "duplicate" else self._index("revisions" if output == "revision" else output)
        if index is None:
            return Recent(output)
        n = index.refresh()
        timed = self.cfg.input.time_field is not None and not self.text_output and output != "dead_letter"
        records = []
        for i in range(max(0, n - limit), n):
            line = index.line(i)
            tags = parse_file_tags(line)
            if tags is None:
                continue
            doc = self.decode(line, "") if timed else None
            records.append((doc.time_ms if isinstance(doc, Doc) else None, tags))
        # event times are not in input order: the earliest one read is where the sample starts
        first = min((t for t, _ in records if t is not None), default=None)
        return Recent(output, records, n <= limit, None if n <= limit else first)

    def _index(self, status: str) -> LineIndex | None:
        """The kept index of ``unique.jsonl``, ``dead_letter.jsonl`` or ``revisions.jsonl`` (None: no such file)."""
        index = self._counted.get(status)
        if index is None:
            path = self.dup_path.with_name(f"{status}.jsonl")
            if not path.is_file():
                return None
            index = self._counted[status] = LineIndex(path)  # kept: later calls index only new lines
        return index

    def fetch(self, wanted: Sequence[Wanted]) -> dict[Wanted, Doc | str]:
        return {w: self._fetch_one(w) for w in wanted}

    def _fetch_one(self, w: Wanted) -> Doc | str:
        position = w.position or (w.id if w.id and w.id.startswith("line:") else None)
        if position and position.startswith("line:") and self.input is not None:
            return self._from_input(int(position[5:]), w.id)
        if w.id is None:
            return "no id or input position in the tags"
        where = self._id_map().get(w.id)
        if where is None:
            hint = "" if self.input is not None else " (pass the run's input file to fetch it by position)"
            searched = [p.name for p in (self.unique_path, self.dup_path, self.revisions_path) if p.is_file()]
            return f"id {w.id} is not in {' or '.join(searched)}{hint}"
        index, i = where
        line = index.line(i)
        position = f"{index.path.name}:{i + 1}"
        if self.text_output:
            obj = orjson.loads(line)
            return Doc(str(obj.get("id")), str(obj.get("text", "")), position)
        return self.decode(line, position)

    def _from_input(self, line_no: int, want_id: str | None) -> Doc | str:
        assert self.input is not None
        if line_no < 1 or line_no > self.input.refresh():
            return f"line:{line_no} is beyond the input file's {len(self.input)} lines"
        doc = self.decode(self.input.line(line_no - 1), f"line:{line_no}", fallback_id=f"line:{line_no}")
        if isinstance(doc, Doc) and want_id is not None and doc.id != want_id:
            return f"input line {line_no} holds id {doc.id}, not {want_id}: is the input file the one this output came from?"
        return doc

    def _id_map(self) -> dict[str, tuple[LineIndex, int]]:
        if self._ids is None:
            ids: dict[str, tuple[LineIndex, int]] = {}
            # duplicates first, so a root's line in unique.jsonl wins when an id repeats
            for path in (self.dup_path, self.revisions_path, self.unique_path):
                if not path.is_file():
                    continue
                index = self.dups if path == self.dup_path else LineIndex(path)
                if index is not self.dups:
                    self._opened.append(index)
                index.refresh()  # before the pass: a line indexed by id is always in the index
                id_field = "id" if self.text_output else self.cfg.input.id_field
                with open(path, "rb") as f:  # one sequential pass, not a seek per line
                    for i, line in enumerate(f):
                        if i >= len(index):
                            break  # a line still being written
                        doc_id = orjson.loads(line).get(id_field)
                        if doc_id is not None:
                            ids[str(doc_id)] = (index, i)
            self._ids = ids
        return self._ids

    def close(self) -> None:
        for index in (self.dups, self.input, *self._opened, *self._counted.values()):
            if index is not None:
                index.close()
