"""The replay what-if: flip counts on a feed built so that the pairs' similarities are known.

Each related pair shares three paragraphs (in another order, so the LD signature does not
align and containment stays below 0.8) and has a tail of its own; the tail lengths set the
shingle Jaccard: tails of 0.36x the shared words give J ~0.58 (a near-duplicate at threshold
0.45, not at 0.7), tails of 1.1x give J ~0.31 (never one), a copy with one word changed J ~0.95
(one at both). So at 0.45 -> 0.7 exactly the J ~0.58 copies flip to unique, and a copy of such
a copy changes its root.
"""

from __future__ import annotations

import random

import numpy as np
import orjson
import pytest

from streamdedup.config import Config, with_settings
from streamdedup.tools.whatif import (DUPLICATE_CHANGED, DUPLICATE_TO_UNIQUE, UNIQUE_TO_DUPLICATE, Outcome, Replayer, ReplayInput,
                                diff, flip_kind)

SHARED_WORDS = 300
# the feed's copies carry paragraphs of new words (revisions by the engine's test): the threshold
# cases compare links, so revisions are off here (the command's revision counts are tested below)
CUR = with_settings(Config(), ["verify.jaccard_threshold=0.45", "verify.revisions=off"])
CAND = with_settings(Config(), ["verify.jaccard_threshold=0.7", "verify.revisions=off"])


def _words(rng: random.Random, n: int) -> list[str]:
    return [f"w{rng.randrange(1_000_000)}" for _ in range(n)]


def _pair(rng: random.Random, tail_ratio: float) -> tuple[str, str]:
    paras = [_words(rng, SHARED_WORDS // 3) for _ in range(3)]
    tail = int(SHARED_WORDS * tail_ratio)
    a = paras[0] + paras[1] + paras[2] + _words(rng, tail)
    b = paras[2] + paras[0] + paras[1] + _words(rng, tail)
    return " ".join(a), " ".join(b)


def _feed() -> tuple[bytes, dict[str, list[int]]]:
    """The feed's lines and, per kind, the line indices of the records that kind is about."""
    rng = random.Random(12)
    lines: list[dict | bytes] = []
    about: dict[str, list[int]] = {"borderline": [], "far": [], "close": [], "changed": []}
    for k in range(6):  # J ~0.58: duplicates at 0.45 only
        a, b = _pair(rng, 0.36)
        lines += [{"id": f"a{k}", "text": a}, {"id": f"b{k}", "text": b}]
        about["borderline"].append(len(lines) - 1)
    for k in range(3):  # J ~0.31: never
        a, b = _pair(rng, 1.1)
        lines += [{"id": f"fa{k}", "text": a}, {"id": f"fb{k}", "text": b}]
        about["far"].append(len(lines) - 1)
    for k in range(3):  # one word changed: always, same root
        words = _words(rng, 400)
        lines.append({"id": f"ca{k}", "text": " ".join(words)})
        words[200] = "changed"
        lines.append({"id": f"cb{k}", "text": " ".join(words)})
        about["close"].append(len(lines) - 1)
    for k in range(2):  # a copy of a borderline copy: its root is a (at 0.45) or the copy b (at 0.7)
        a, b = _pair(rng, 0.36)
        c = b.split()
        c[150] = "changed"
        lines += [{"id": f"ra{k}", "text": a}, {"id": f"rb{k}", "text": b}, {"id": f"rc{k}", "text": " ".join(c)}]
        about["borderline"].append(len(lines) - 2)
        about["changed"].append(len(lines) - 1)
    lines += [b"{not json", {"id": "solo", "text": " ".join(_words(rng, 200))}]
    return b"\n".join(x if isinstance(x, bytes) else orjson.dumps(x) for x in lines) + b"\n", about


@pytest.fixture(scope="module")
def replayed():
    data, about = _feed()
    replayer = Replayer(ReplayInput.from_lines(data), now_ms=1_700_000_000_000)
    return replayer, about, replayer.decide(CUR), replayer.decide(CAND)


def test_the_feed_has_the_similarities_it_was_built_for(replayed) -> None:
    """The hand computation's premise, in the engine's own estimates: the borderline copies
    sit between the two thresholds and neither LD nor containment makes them duplicates."""
    _, about, cur, _ = replayed
    for k in about["borderline"]:
        o = cur[k]
        assert o.status == "duplicate" and o.relation == "near_duplicate", o
        assert 0.47 < o.jaccard < 0.68 and (o.ld_similarity or 0) < 0.65, o
        assert max(o.containment_in_matched, o.containment_of_matched) < 0.8, o
    assert all(cur[k].status == "unique" for k in about["far"])
    assert all(cur[k].status == "duplicate" and cur[k].jaccard > 0.85 for k in about["close"])


def test_flip_counts_match_the_hand_computed_case(replayed) -> None:
    replayer, about, cur, cand = replayed
    report = diff(cur, cand, replayer.source.name)
    assert report.records == 6 * 2 + 3 * 2 + 3 * 2 + 2 * 3 + 2  # 6+3+3 pairs, 2 triples, a dead letter, a loner
    counts = report.counts()
    assert counts == {DUPLICATE_TO_UNIQUE: 8, DUPLICATE_CHANGED: 2}, counts
    assert sorted(f.record for f in report.flips if f.kind == DUPLICATE_TO_UNIQUE) == sorted(about["borderline"])
    for f in report.flips:
        if f.kind == DUPLICATE_CHANGED:
            k = f.record
            assert f.current.duplicate_of == f"ra{about['changed'].index(k)}"
            assert f.candidate.duplicate_of == f.candidate.matched == f"rb{about['changed'].index(k)}"
    assert report.current["dead_letter"] == report.candidate["dead_letter"] == 1
    assert report.current["duplicate"] - report.candidate["duplicate"] == 8
    # the other direction is the mirror image
    back = replayer.compare(CAND, CUR).counts()
    assert back == {UNIQUE_TO_DUPLICATE: 8, DUPLICATE_CHANGED: 2}, back


def test_flipped_records_carry_their_figures(replayed) -> None:
    replayer, about, _, _ = replayed
    report = replayer.compare(CUR, CAND)
    f = next(f for f in report.flips if f.kind == DUPLICATE_TO_UNIQUE)
    assert f.name == f"line:{f.record + 1}" and f.id == f.current.id
    assert f.current.duplicate_of and f.current.matched and f.current.jaccard is not None
    assert f.current.ld_similarity is not None and f.current.containment_in_matched is not None
    assert f.candidate == Outcome("unique", f.current.id)
    out = orjson.loads(orjson.dumps(report.to_json()))
    assert out["flips"][DUPLICATE_TO_UNIQUE] == 8 and out["flips"][UNIQUE_TO_DUPLICATE] == 0
    assert len(out["flipped"]) == 10 and out["flipped"][0]["current"]["jaccard"] is not None


def test_a_sweep_counts_duplicates_per_threshold(replayed) -> None:
    replayer, *_ = replayed
    points = dict(replayer.sweep(CUR, "verify.jaccard_threshold", [0.45, 0.7, 0.99]))
    # pairs 6 + 3 close + 2 triples x 2 at 0.45; at 0.7 the close ones and the triples' third
    assert points[0.45] == 6 + 3 + 4 and points[0.7] == 3 + 2
    assert points[0.99] <= points[0.7]


def test_lines_are_cut_as_file_mode_counts_them() -> None:
    data = b"one\ntwo\r\nthree\nfour"
    assert ReplayInput.from_lines(data, skip=1, limit=2).data == b"two\r\nthree\n"
    src = ReplayInput.from_lines(data, skip=3)
    assert src.data == b"four" and src.name(0) == "line:4"
    assert ReplayInput.from_lines(data, skip=9).data == b""


def test_kafka_records_are_decided_in_the_order_given() -> None:
    values = [orjson.dumps({"id": "x", "text": "the same short story about rates"})] * 2 + [b""]
    src = ReplayInput(values=values, names=["t:0:5", "t:0:6", "t:0:7"], times=np.array([1, 2, 3], np.int64))
    out = Replayer(src, now_ms=0).decide(Config())
    assert [o.status for o in out] == ["unique", "duplicate", "dead_letter"]
    assert out[1].relation == "exact"


def test_flip_kind_is_none_when_only_the_figures_moved() -> None:
    a = Outcome("duplicate", "x", "r", "r", "near_duplicate", 0.8)
    assert flip_kind(a, Outcome("duplicate", "x", "r", "m", "near_duplicate", 0.9)) is None
    assert flip_kind(Outcome("unique"), Outcome("dead_letter")) == "unique->dead_letter"


# ----------------------------------------------------------------------------- the command, against file mode


def _file_mode_outcomes(out_dir) -> tuple[dict[str, tuple], int]:
    """id -> (status, duplicate_of, relation) from a file-mode run's outputs, and its dead letters
    (a revision is on the unique output, with its own status)."""
    from streamdedup.pipeline.tags import parse_file_tags

    by_id: dict[str, tuple] = {}
    for name, status in (("unique", "unique"), ("duplicates", "duplicate")):
        for line in (out_dir / f"{name}.jsonl").read_bytes().splitlines():
            obj = orjson.loads(line)
            tags = parse_file_tags(obj)
            assert obj["id"] not in by_id  # outputs are matched by id
            assert tags.status == status or (tags.status, name) == ("revision", "unique")
            linked = tags.status != "unique"
            by_id[obj["id"]] = (tags.status, tags.duplicate_of, tags.relation) if linked else (status, None, None)
    return by_id, len((out_dir / "dead_letter.jsonl").read_bytes().splitlines())


def test_tune_replay_agrees_with_two_file_mode_runs(tmp_path, monkeypatch) -> None:
    """The check of a replay: on the demo feed, verify.jaccard_threshold 0.45 (the current config,
    from --config) against 0.7 (--set) flips exactly the records that two ``run --input`` runs
    with those settings decide differently."""
    from click.testing import CliRunner

    from streamdedup._kernels import cache
    from streamdedup.cli import main
    from streamdedup.cli.demo import build_feed

    monkeypatch.setattr(cache, "missing_kernels", lambda names=cache.PIPELINE_KERNELS: [])  # compile here, quietly
    lines, _ = build_feed(4000, 3)
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(b"\n".join(lines) + b"\n")
    conf = tmp_path / "current.yaml"
    conf.write_text("input:\n  text_fields: [title, text]\n  time_field: time\nverify:\n  jaccard_threshold: 0.45\n")
    runner = CliRunner()
    runs = []
    for name, env in (("at045", {}), ("at070", {"STREAMDEDUP_VERIFY__JACCARD_THRESHOLD": "0.7"})):
        result = runner.invoke(main, ["run", "--config", str(conf), "--input", str(feed), "--output-dir", str(tmp_path / name)],
                               env=env, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        runs.append(_file_mode_outcomes(tmp_path / name))
    (a, dead_a), (b, dead_b) = runs
    expected: dict[str, set] = {UNIQUE_TO_DUPLICATE: set(), DUPLICATE_TO_UNIQUE: set(), DUPLICATE_CHANGED: set()}
    for doc_id, x in a.items():
        y = b[doc_id]
        if x[0] != y[0]:
            expected.setdefault(f"{x[0]}->{y[0]}", set()).add(doc_id)
        elif x != y:
            expected[DUPLICATE_CHANGED].add(doc_id)
    # the comparison is not vacuous (those the tighter threshold unlinks are revisions on this feed)
    assert expected[DUPLICATE_TO_UNIQUE] | expected.get("revision->unique", set()) and expected[DUPLICATE_CHANGED]

    result = runner.invoke(main, ["tune", "--replay", str(feed), "--config", str(conf), "--set", "verify.jaccard_threshold=0.7",
                                  "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = orjson.loads(result.stdout)
    assert report["records"] == len(lines)
    assert {k: report["flips"][k] for k in expected} == {k: len(v) for k, v in expected.items()}
    got: dict[str, set] = {k: set() for k in expected}
    for f in report["flipped"]:
        got[f["kind"]].add(f["id"])
    assert got == expected
    for side, outcomes, dead in (("current", a, dead_a), ("candidate", b, dead_b)):
        want = {s: sum(o[0] == s for o in outcomes.values()) for s in ("unique", "duplicate", "revision")}
        assert report[side] == {k: v for k, v in want.items() if v} | {"dead_letter": dead}


def _cli(args: list[str], **kw):
    from click.testing import CliRunner

    from streamdedup.cli import main

    return CliRunner().invoke(main, args, prog_name="streamdedup", **kw)


@pytest.mark.parametrize(("args", "message"), [
    (["tune"], "give --threshold (LSH bands for it) or --replay"),
    (["tune", "--threshold", "0.5", "--set", "verify.jaccard_threshold=0.6"], "--set is for --replay"),
    (["tune", "--threshold", "0.5", "--limit", "10"], "--limit is for --replay"),
    (["tune", "--replay", "{feed}", "--threshold", "0.5"], "--threshold is for choosing LSH bands"),
    (["tune", "--replay", "{feed}"], "give at least one --set"),
    (["tune", "--replay", "{feed}", "--set", "verify.jaccard_treshold=0.6"], "verify.jaccard_treshold is not a setting"),
    (["tune", "--replay", "{feed}", "--set", "verify.jaccard_threshold=high"], "verify.jaccard_threshold: Input should be a valid number"),
    (["tune", "--replay", "{feed}", "--set", "verify.jaccard_threshold=0.6", "--since", "48h"], "for a file, --since is a number"),
    (["tune", "--replay", "{feed}", "--set", "engine.max_candidates=4", "--plot", "{tmp}/p.png"], "--plot sweeps a threshold"),
])
def test_tune_usage_errors_name_the_problem(args, message, tmp_path) -> None:
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(b'{"id": "a", "text": "a story"}\n')
    result = _cli([a.format(feed=feed, tmp=tmp_path) for a in args])
    assert result.exit_code == 2 and message in result.output, result.output


def test_tune_replay_prints_flips_and_plots_the_sweep(tmp_path, monkeypatch) -> None:
    from streamdedup._kernels import cache

    monkeypatch.setattr(cache, "missing_kernels", lambda names=cache.PIPELINE_KERNELS: [])
    data, _ = _feed()
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(data)
    png = tmp_path / "sweep.png"
    off = {"STREAMDEDUP_VERIFY__REVISIONS": "off"}
    result = _cli(["tune", "--replay", str(feed), "--set", "verify.jaccard_threshold=0.7", "--plot", str(png)],
                  env={"STREAMDEDUP_VERIFY__JACCARD_THRESHOLD": "0.45", **off})
    assert result.exit_code == 0, result.output
    assert "would flip: unique->duplicate 0, duplicate->unique 8, duplicate changed 2" in result.stdout
    assert "line:2 " in result.stdout and "near_duplicate of a0" in result.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the JSON form carries the sweep: duplicates never rise with the threshold
    result = _cli(["tune", "--replay", str(feed), "--set", "verify.jaccard_threshold=0.7", "--plot", str(png), "--json"],
                  env={"STREAMDEDUP_VERIFY__JACCARD_THRESHOLD": "0.45", **off})
    sweep = orjson.loads(result.stdout)["sweep"]
    values = [p["value"] for p in sweep["points"]]
    dups = [p["duplicates"] for p in sweep["points"]]
    assert sweep["setting"] == "verify.jaccard_threshold" and 0.45 in values and 0.7 in values
    assert dups == sorted(dups, reverse=True) and dups[values.index(0.45)] == 13 and dups[values.index(0.7)] == 5


def test_a_file_is_read_only_as_far_as_asked(tmp_path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"one\ntwo\r\nthree\nfour")
    for skip, limit in ((0, None), (1, 2), (3, None), (9, 1)):
        assert ReplayInput.from_file(str(path), skip, limit) == ReplayInput.from_lines(path.read_bytes(), skip, limit)


def test_the_duplicates_a_candidate_keeps_are_counted_by_the_rule_that_accepts_them(replayed) -> None:
    """The close copies (one word changed) stay duplicates at 0.7, accepted by the Jaccard rule;
    every duplicate of the candidate is counted once, by its rule (changed ones too): the table
    sums to the candidate's duplicate count."""
    from streamdedup.tools.whatif import RULES, accepted_by

    replayer, about, cur, cand = replayed
    report = diff(cur, cand, replayer.source.name)
    assert set(report.kept) <= set(RULES)
    assert report.kept["Jaccard"] >= len(about["close"])
    assert sum(report.kept.values()) == report.candidate["duplicate"] == sum(b.status == "duplicate" for b in cand)
    assert report.counts()[DUPLICATE_CHANGED] > 0  # the changed ones are among them
    assert all(accepted_by(cand[k]) == "Jaccard" for k in about["close"])
    assert report.to_json()["kept_by_rule"] == dict(report.kept)


@pytest.mark.parametrize(("relation", "reason", "rule"), [
    ("exact", "equal canonical digests", "exact"),
    ("contained_in", "containment of new in earlier 0.950, signature embeds at 0.900", "containment"),
    ("near_duplicate", "Jaccard 0.800 >= 0.55", "Jaccard"),
    ("near_duplicate", "boilerplate bands ignored; LD similarity 0.810 >= 0.65 with Jaccard 0.450", "LD similarity"),
    ("near_duplicate", "character noise: exact 8-gram Jaccard 0.700 >= 0.58 (...), LD similarity 0.950 >= 0.9", "character evidence"),
])
def test_a_duplicate_is_accepted_by_one_rule(relation, reason, rule) -> None:
    from streamdedup.tools.whatif import accepted_by

    assert accepted_by(Outcome("duplicate", relation=relation, duplicate_of="x", reason=reason)) == rule
    assert accepted_by(Outcome("unique")) is None


def test_tune_replay_counts_revisions(tmp_path) -> None:
    """With revisions looked for (the default), the feed's borderline copies, which replace a
    paragraph with new words, are revisions: counted apart, and the flips say so."""
    data, about = _feed()
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(data)
    result = _cli(["tune", "--replay", str(feed), "--set", "verify.jaccard_threshold=0.7", "--json"],
                  env={"STREAMDEDUP_VERIFY__JACCARD_THRESHOLD": "0.45"})
    assert result.exit_code == 0, result.output
    report = orjson.loads(result.stdout)
    assert report["current"]["revision"] >= len(about["borderline"])
    assert report["flips"]["revision->unique"] >= 6 and report["flips"][DUPLICATE_TO_UNIQUE] == 0
    flipped = [f for f in report["flipped"] if f["kind"] == "revision->unique"]
    assert all(f["current"]["changed"] for f in flipped)  # what changed is shown with each
    replayer = Replayer(ReplayInput.from_lines(data), now_ms=1_700_000_000_000)
    assert [o.status for o in replayer.decide(with_settings(Config(), ["verify.revisions=duplicates"]))] == \
        [o.status for o in replayer.decide(Config())]  # the policy routes; it does not change the status
