"""The staged topology's pure parts: decision records and a worker's pending records."""

import pytest

from streamdedup.runtime.kafka.decision_record import BadDecisionRecord, DecisionRecord, decode, encode
from streamdedup.runtime.staged.pending import Pending
from streamdedup.pipeline.tags import DeadLetterTags, DuplicateTags


@pytest.mark.parametrize("rec", [
    DecisionRecord(0), DecisionRecord(2**62),
    DecisionRecord(7, DuplicateTags("story-1", "near_duplicate", 0.8123, None, "story-1", "estimated Jaccard 0.81")),
    DecisionRecord(9, DuplicateTags("ïd \"quoted\"", "exact", 1.0, 1.0, "m", "")),
    DecisionRecord(11, DuplicateTags("s", "near_duplicate", 0.9, 0.95, "m", "J", "t:0:1", "t:0:2", "revision",
                                     ("corrected", "400 -> 600"))),
    DecisionRecord(3, DeadLetterTags("decode", "invalid JSON: \x00 at 1", "news:2:3")),
])
def test_decision_records_round_trip(rec):
    assert decode(encode(rec)) == rec


def test_unique_decisions_are_small():
    assert len(encode(DecisionRecord(123456789))) == 10


@pytest.mark.parametrize("bad", [b"", None, b"U", b"Uabc", b"D{", b"D[]", b'X{"o":1}', b"Q12", b'D{"o":1,"zzz":2}'])
def test_unreadable_decision_records_are_named(bad):
    with pytest.raises(BadDecisionRecord):
        decode(bad)


def _lane(committed=10):
    p = Pending()
    p.assign("p0", committed)
    return p


def test_decisions_release_records_in_order():
    p = _lane()
    for o in (10, 11, 12):
        p.add("p0", o, f"r{o}")
    p.offer("p0", 11, "d11", 100)
    assert p.release("p0") == []  # 10 is not decided: nothing overtakes it
    p.offer("p0", 10, "d10", 101)
    assert p.release("p0") == [("r10", "d10"), ("r11", "d11")]
    assert p.floor("p0") == 12 and p.waiting("p0") == 1


def test_first_decision_wins_and_stale_ones_are_skipped():
    p = _lane()
    p.add("p0", 10, "r10")
    p.offer("p0", 10, "first", 5)
    p.offer("p0", 10, "second", 6)  # a re-sent fingerprint's answer
    assert p.release("p0") == [("r10", "first")]
    p.offer("p0", 10, "third", 7)  # below the floor now
    p.offer("p0", 9, "old", 8)  # below the committed offset
    assert p.stale("p0") == 3 and p.release("p0") == []


def test_decisions_before_their_records_are_kept():
    """A restarted worker reads decisions before it has re-consumed the input."""
    p = _lane()
    p.offer("p0", 10, "d10", 50)
    p.offer("p0", 11, "d11", 51)
    assert p.release("p0") == []
    p.add("p0", 10, "r10")
    p.add("p0", 11, "r11")
    assert p.release("p0") == [("r10", "d10"), ("r11", "d11")]


def test_decisions_resume_point_keeps_every_needed_decision():
    p = _lane()
    assert p.decisions_resume("p0") is None
    p.add("p0", 10, "r10")
    p.add("p0", 12, "r12")  # offsets may skip (transaction markers)
    p.offer("p0", 12, "d12", 40)
    p.offer("p0", 10, "d10-stale-copy", 41)
    p.offer("p0", 10, "d10-again", 42)  # stale: 10 already has one
    assert p.decisions_resume("p0") == 40  # d12 is needed and d10 too (41): the smallest
    assert p.release("p0") == [("r10", "d10-stale-copy"), ("r12", "d12")]
    assert p.decisions_resume("p0") == 43 and p.floor("p0") == 13


def test_revoked_partitions_are_forgotten():
    p = _lane()
    p.add("p0", 10, "r")
    assert p.drop("p0") == 1 and p.waiting() == 0
    with pytest.raises(KeyError):
        p.add("p0", 11, "r")


def test_resent_positions_get_their_first_decision():
    from streamdedup.runtime.staged.recent import RecentPositions

    r = RecentPositions(per_partition=100)
    first = r.sort_out(["a", "a", "b"], [0, 1, 0])
    assert first.fresh == [0, 1, 2] and not first.before and not first.in_batch
    r.remember(["a", "a", "b"], [0, 1, 0], [10, -1, 11])
    # a restarted worker re-sends a:1 and b:0; a zombie's a:2 arrives twice in one batch
    again = r.sort_out(["a", "b", "a", "a", "b"], [1, 0, 2, 2, 1])
    assert again.before == {0: -1, 1: 11} and again.in_batch == {3: 2} and again.fresh == [2, 4]


def test_recent_positions_are_bounded():
    from streamdedup.runtime.staged.recent import RecentPositions

    r = RecentPositions(per_partition=50)
    r.remember(["a"] * 200, range(200), range(200))
    assert len(r) <= 50 and r.forgotten >= 150
    assert r.sort_out(["a", "a"], [199, 0]).fresh == [1]  # the newest kept, the oldest forgotten


def test_partition_map_and_staged_topic_checks():
    from streamdedup.config import KafkaConfig
    from streamdedup.runtime.kafka.staged_topics import check_staged_topics
    from streamdedup.runtime.kafka.startup import StartupError

    k = KafkaConfig(input_topics=("a", "b"))
    ok = {"a": 2, "b": 3, "news.fingerprints": 1, "news.decisions": 5}
    assert check_staged_topics(k, ok) == {("a", 0): 0, ("a", 1): 1, ("b", 0): 2, ("b", 1): 3, ("b", 2): 4}
    for broken, words in (({**ok, "news.fingerprints": 3}, "kafka.staged.fingerprints_topic"),
                          ({**ok, "news.decisions": 4}, "kafka.staged.decisions_topic"),
                          ({k2: v for k2, v in ok.items() if k2 != "news.decisions"}, "does not exist")):
        with pytest.raises(StartupError, match=words):
            check_staged_topics(k, broken)
