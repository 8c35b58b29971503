"""Revisions through the engine and file mode: linked like a copy, status ``revision``, routed by
``verify.revisions``, what changed in the tags, and the same after a restart or a replay."""

from __future__ import annotations

import orjson
import pytest

from streamdedup import load_config
from streamdedup._kernels.records import F_REVISION
from streamdedup.engine import record as engine_record
from streamdedup.engine.deduplicator import Deduplicator, Document
from streamdedup.engine.stored import unconfirmed_decisions
from streamdedup.pipeline.tags import parse_file_tags
from streamdedup.runtime.filemode import run_file
from streamdedup.state import MemoryStore
from streamdedup.state.rocks import RocksStore
from tests.unit.test_revisions import SOURCE

CORRECTION = "CORRECTED - " + SOURCE.replace("400 people", "600 people")
TYPO_COPY = SOURCE.replace("industrial", "industrail")


def cfg(**env: str):
    return load_config(environ={f"STREAMDEDUP_{k}": v for k, v in env.items()})


def _feed(tmp_path):
    lines = [{"id": "story", "text": SOURCE}, {"id": "copy", "text": TYPO_COPY}, {"id": "fix", "text": CORRECTION}]
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")
    return path


def _outputs(out) -> dict[str, tuple[str, object]]:
    got = {}
    for name in ("unique", "duplicates"):
        for line in (out / f"{name}.jsonl").read_bytes().splitlines():
            obj = orjson.loads(line)
            got[obj["id"]] = (name, parse_file_tags(obj))
    return got


@pytest.mark.parametrize(("policy", "where"), [("unique", "unique"), ("duplicates", "duplicates")])
def test_a_correction_goes_where_the_policy_says_with_its_tags(tmp_path, policy, where) -> None:
    summary = run_file(cfg(VERIFY__REVISIONS=policy), str(_feed(tmp_path)), str(tmp_path / "out"))
    got = _outputs(tmp_path / "out")
    name, tags = got["fix"]
    assert name == where and tags.status == "revision" and tags.duplicate_of == "story" and tags.matched in ("story", "copy")
    assert "400 -> 600" in tags.changed and "corrected" in tags.changed
    assert got["copy"][0] == "duplicates" and got["copy"][1].status == "duplicate" and not got["copy"][1].changed
    assert got["story"] == ("unique", got["story"][1]) and got["story"][1].status == "unique"
    assert summary.revisions == 1 and summary.reconciles()
    assert (summary.unique, summary.duplicates) == ((2, 1) if policy == "unique" else (1, 2))


def test_an_update_that_matched_a_copy_of_its_story_is_read_against_the_story(tmp_path) -> None:
    """The update matched a noisy copy of the story that shares its footer (the copy is closer to
    it than the story is): against the copy, its one changed figure reads as noise; against the
    story it is a revision. A copy of that copy is still a copy."""
    credits = ("\n(Reporting by Anna Keller in Frankfurt, additional reporting by Tom Becker in London and Maria "
               "Rossi in Rome; Editing by the markets desk; newsroom@wire.example; +44 20 7542 1234)")
    noisy = SOURCE.replace("industrial", "indusrial").replace("expectations", "expectatoins") + credits
    lines = [{"id": "story", "text": SOURCE}, {"id": "copy", "text": noisy},
             {"id": "fix", "text": SOURCE.replace("400 people", "600 people") + credits},
             {"id": "copy2", "text": noisy.replace("Ohio", "Ohio ")}]
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")
    run_file(cfg(), str(path), str(tmp_path / "out"))
    got = _outputs(tmp_path / "out")
    name, tags = got["fix"]
    assert tags.matched == "copy" and tags.duplicate_of == "story"  # the case: linked to the copy
    assert name == "unique" and tags.status == "revision" and "400 -> 600" in tags.changed
    assert got["copy"][1].status == "duplicate" and got["copy2"][1].status == "duplicate"


def test_with_revisions_off_a_correction_is_a_duplicate(tmp_path) -> None:
    run_file(cfg(VERIFY__REVISIONS="off"), str(_feed(tmp_path)), str(tmp_path / "out"))
    name, tags = _outputs(tmp_path / "out")["fix"]
    assert name == "duplicates" and tags.status == "duplicate" and not tags.changed


def test_a_revision_is_stored_and_replayed_and_restored(tmp_path) -> None:
    """The record keeps the flag and what changed: an unconfirmed batch re-emits the same
    decision, a restarted engine (its index rebuilt from records with the field) decides
    the next documents as one that never stopped."""
    c = cfg()
    docs = [Document("story", SOURCE, 1), Document("fix", CORRECTION, 2)]
    later = [Document("copy", TYPO_COPY, 3), Document("fix2", CORRECTION.replace("600 people", "650 people"), 4)]
    path = str(tmp_path / "state")
    engine = Deduplicator(c, RocksStore(path), explicit_confirm=True)
    first = list(engine.process(docs))
    assert [d.status for d in first] == ["unique", "revision"]
    raw = engine.store.get_many([1])[0]
    assert raw[2] & F_REVISION and engine_record.decode(1, raw, engine.index_bands, engine.num_perm).changed == first[1].changed
    assert engine_record.canonical_text(raw).startswith(b"corrected ")  # the text after the field is read whole
    engine.close()
    again = Deduplicator(c, RocksStore(path))
    never = Deduplicator(c, MemoryStore())
    never.process(docs)
    assert [d.tags() for d in again.process(later)] == [d.tags() for d in never.process(later)]
    again.close()


def test_replayed_revisions_carry_their_tags(tmp_path) -> None:
    from streamdedup.engine.checkpoint import Source

    c = cfg()
    engine = Deduplicator(c, MemoryStore(), explicit_confirm=True)
    src = Source("news", 0)
    docs = [Document("story", SOURCE, 1, src, 10), Document("fix", CORRECTION, 2, src, 11)]
    live = list(engine.process(docs, {src: 12}))
    replayed = unconfirmed_decisions(engine)
    assert replayed[(src, 11)] == live[1] and replayed[(src, 11)].status == "revision"
    assert replayed[(src, 11)].tags()["changed"] == list(live[1].changed)


def test_version_5_records_are_read() -> None:
    """A state written before revisions existed (record version 5: the same layout, no record
    flagged) opens and decodes."""
    c = cfg()
    engine = Deduplicator(c, MemoryStore())
    engine.process([Document("story", SOURCE, 1), Document("copy", TYPO_COPY, 2)])
    store = engine.store
    store._records = {seq: bytes([5]) + raw[1:] for seq, raw in store._records.items()}
    st = engine_record.decode(1, store._records[1], engine.index_bands, engine.num_perm)
    assert st.id == "copy" and st.root_id == "story" and st.changed == ()
    reopened = Deduplicator(c, store)
    assert [d.status for d in reopened.process([Document("copy2", TYPO_COPY, 3)])] == ["duplicate"]


def test_explain_says_revision_as_the_engine_does(tmp_path) -> None:
    from click.testing import CliRunner

    from streamdedup.cli import main
    from streamdedup.cli.explain import explain_pair

    c = cfg()
    rev = explain_pair(SOURCE, CORRECTION, c)["revision"]
    assert rev["revised"] and "400 -> 600" in rev["changed"] and "marker" in rev["kinds"]
    assert explain_pair(SOURCE, TYPO_COPY, c)["revision"] == {"revised": False, "kinds": [], "changed": [], "partial": False}
    assert explain_pair(SOURCE, CORRECTION, cfg(VERIFY__REVISIONS="off"))["revision"] is None
    (tmp_path / "a.txt").write_text(SOURCE)
    (tmp_path / "b.txt").write_text(CORRECTION)
    result = CliRunner().invoke(main, ["explain", str(tmp_path / "a.txt"), str(tmp_path / "b.txt")], env={})
    assert result.exit_code == 0 and "REVISION (marker, figures" in result.output, result.output
