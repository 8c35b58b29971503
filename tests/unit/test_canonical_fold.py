"""The Traditional -> Simplified Chinese fold of the canonical form."""

from __future__ import annotations

import sys
import threading
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamdedup import Fingerprinter, load_config
from streamdedup.text import canonical, charclass, fold
from streamdedup.text.canonical import canonicalize, check_fold, prepare_batch
from streamdedup.config import CanonicalConfig
from streamdedup.errors import ConfigError, IncompatibleFingerprintError

opencc = pytest.importorskip("opencc")  # a core dependency: a missing one fails test_missing_package_*

# a People's Daily style sentence and the same through OpenCC's s2t (as the zh suite makes its copies)
SIMPLIFIED = "国务院总理李鹏发表新年贺词，祝愿全国各族人民在新的一年里取得更大的成就。"
TRADITIONAL = "國務院總理李鵬發表新年賀詞，祝願全國各族人民在新的一年裡取得更大的成就。"
FRENCH = "Le Président de la République a reçu à l'Élysée les délégués, déçus."
# a Japanese sentence in shinjitai; t2s rewrites part of its kanji into Simplified Chinese forms
JAPANESE = "国際連合の総会は、人間の権利と自由の尊重を確保するため、東京で会議を開いた。"

OFF = CanonicalConfig(fold_traditional="off")
ON = CanonicalConfig(fold_traditional="on")
AUTO = CanonicalConfig()


def _fingerprinter(value: str) -> Fingerprinter:
    return Fingerprinter(load_config(environ={"STREAMDEDUP_FINGERPRINT__CANONICAL__FOLD_TRADITIONAL": value}).fingerprint)


FP = {v: _fingerprinter(v) for v in ("auto", "on", "off")}


def test_traditional_and_simplified_share_canonical_text_and_digest() -> None:
    assert TRADITIONAL != SIMPLIFIED and len(TRADITIONAL) == len(SIMPLIFIED)
    assert canonicalize(TRADITIONAL) == canonicalize(SIMPLIFIED) == canonicalize(SIMPLIFIED, OFF)
    for value in ("auto", "on"):
        b = FP[value].fingerprint_batch([TRADITIONAL, SIMPLIFIED])
        assert b.canonical[0] == b.canonical[1]
        assert b.digests[0] == b.digests[1]
        assert (b.minhash[0] == b.minhash[1]).all()


def test_off_keeps_the_two_scripts_apart() -> None:
    assert canonicalize(TRADITIONAL, OFF) != canonicalize(SIMPLIFIED, OFF)
    b = FP["off"].fingerprint_batch([TRADITIONAL, SIMPLIFIED])
    assert b.canonical[0] == canonicalize(TRADITIONAL, OFF).encode("utf-8")  # the text as written
    assert b.digests[0] != b.digests[1]


@pytest.fixture
def converter_must_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any call of the converter fails: what follows pays nothing for the fold."""

    class Refuse:
        def convert(self, text: str) -> str:
            raise AssertionError(f"the fold ran on {text!r}")

    monkeypatch.setattr(fold, "_CONVERTER", [Refuse()])


@pytest.mark.usefixtures("converter_must_not_run")
@pytest.mark.parametrize("cfg", [AUTO, ON])
def test_texts_without_han_never_reach_the_converter(cfg: CanonicalConfig) -> None:
    want = "le président de la république a reçu à l élysée les délégués déçus"
    assert canonicalize(FRENCH, cfg) == canonicalize(FRENCH, OFF) == want
    texts = ["Plain ASCII wire copy.", FRENCH, "<p>Zürich &amp; Genf</p>", "Ελλάδα"]
    raw, _ = prepare_batch(texts, cfg)  # HTML stripped, the rest for the kernel, as it was
    assert raw.tobytes().decode("utf-8") == "".join(canonical._strip_html(t) for t in texts)
    b = Fingerprinter(load_config().fingerprint).fingerprint_batch(texts)
    assert [c.decode() for c in b.canonical] == [canonicalize(t, OFF) for t in texts]


@pytest.mark.usefixtures("converter_must_not_run")
def test_auto_leaves_japanese_alone() -> None:
    assert canonicalize(JAPANESE) == canonicalize(JAPANESE, OFF)


def test_on_folds_japanese_kanji_too() -> None:
    """What t2s does to Japanese: shinjitai that differ from Simplified forms become them
    (際 -> 际, 連 -> 连, 権 stays), kana stay; a kyujitai text is not unified with its shinjitai
    form (經 -> 经 but 経 stays), so folding Japanese buys nothing (see canonical._should_fold)."""
    folded = canonicalize(JAPANESE, ON)
    assert folded != canonicalize(JAPANESE, OFF)
    assert "际" in folded and "连" in folded and "権" in folded and "の" in folded
    assert canonicalize("經済", ON) != canonicalize("経済", ON)


def test_fold_is_after_nfkc_so_compatibility_ideographs_fold_too() -> None:
    # U+F9FE is a CJK compatibility ideograph NFKC maps to 茶; U+FA0C to 兀; full-width Ａ to a
    assert canonicalize("\uf9fe葉ＡＢ國") == canonicalize("茶叶ab国")


def test_every_character_t2s_changes_is_han_and_the_fold_only_writes_han() -> None:
    """The ``_HAN`` ranges that gate the fold hold every character OpenCC's t2s changes, and
    its output is Han only, so casefold and punctuation_to_space do not care about the order."""
    cps = [chr(c) for c in range(0x80, 0x32400) if unicodedata.category(chr(c)) not in ("Cn", "Cs", "Co", "Cc")]
    out = fold.t2s(AUTO).convert("\n".join(cps)).split("\n")
    assert len(out) == len(cps)
    changed = [(a, b) for a, b in zip(cps, out) if a != b]
    assert len(changed) > 4000
    assert all(charclass.HAN.fullmatch(a) and charclass.HAN.fullmatch(b) for a, b in changed)


def test_one_converter_serves_threads() -> None:
    texts = [TRADITIONAL * (i % 7 + 1) + str(i) for i in range(400)]
    want = [canonicalize(t) for t in texts]
    got: dict[int, list[str]] = {}

    def work(k: int) -> None:
        got[k] = [canonicalize(t) for t in texts]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(got[k] == want for k in range(4))


def test_bad_value_names_the_setting_and_yaml_switches_are_words(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"fingerprint\.canonical\.fold_traditional.*'auto', 'on' or 'off'"):
        load_config(environ={"STREAMDEDUP_FINGERPRINT__CANONICAL__FOLD_TRADITIONAL": "yes please"})
    for word in ("off", "on", "auto"):  # YAML 1.1 reads a bare off/on as a boolean
        (tmp_path / "c.yaml").write_text(f"fingerprint:\n  canonical:\n    fold_traditional: {word}\n")
        assert load_config(tmp_path / "c.yaml", environ={}).fingerprint.canonical.fold_traditional == word
    (tmp_path / "c.yaml").write_text("fingerprint:\n  canonical:\n    fold_traditional: [on]\n")
    with pytest.raises(ConfigError, match=r"fingerprint\.canonical\.fold_traditional"):
        load_config(tmp_path / "c.yaml", environ={})


def test_state_built_with_another_value_is_refused_naming_the_setting() -> None:
    a, b = FP["auto"].params, FP["off"].params
    assert a.differences(b) == ["fingerprint.canonical.fold_traditional: auto vs off"]
    with pytest.raises(IncompatibleFingerprintError, match=r"fingerprint\.canonical\.fold_traditional: auto vs off"):
        a.require_same(b)


def test_missing_package_is_a_config_error_naming_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fold, "_CONVERTER", [])
    monkeypatch.setitem(sys.modules, "opencc", None)  # import opencc now raises ImportError
    with pytest.raises(ConfigError, match=r"fingerprint\.canonical\.fold_traditional: auto needs the opencc package"):
        check_fold(AUTO)
    with pytest.raises(ConfigError, match="fold_traditional: on needs"):
        canonicalize(TRADITIONAL, ON)
    check_fold(OFF)  # off needs nothing
    assert canonicalize(TRADITIONAL, OFF)
    assert canonicalize("ascii only", ON) == "ascii only"


_HAN_TEXT = st.text(st.sampled_from(list("國务院發表贺詞乾隆頭髮瞭解东京の報道カナ，。 ＡａÉé\u00a0\uf9fe<>&;p/")),
                    max_size=40)


@settings(max_examples=120, deadline=None)
@given(st.lists(_HAN_TEXT, min_size=1, max_size=5), st.sampled_from(["auto", "on", "off"]))
def test_kernel_path_equals_the_python_reference_on_han_text(texts: list[str], value: str) -> None:
    """prepare_batch + kernel and canonicalize() agree with the fold in any mode (the ASCII and
    Unicode paths of test_fingerprint's agreement test, on Chinese and Japanese text)."""
    fp = FP[value]
    b = fp.fingerprint_batch(texts)
    for i, t in enumerate(texts):
        assert b.canonical[i] == canonicalize(t, fp.cfg.canonical).encode("utf-8"), t


def test_a_fingerprinter_runs_its_kernel_once_on_its_first_non_ascii_batch(monkeypatch) -> None:
    """prepare_batch builds the Unicode tables for a non-ASCII batch's pre-scan: the Fingerprinter
    takes them instead of running the kernel without them first; a fresh process state (the
    tables not built) still takes the second run, and both give the same fingerprints."""
    from streamdedup.text import unicode_map

    texts = ["Zürich: der Bericht über den Streik", "東京の港でストライキ"]
    want = Fingerprinter(load_config(environ={}).fingerprint).fingerprint_batch(texts)
    for built in (True, False):
        if not built:
            monkeypatch.setattr(unicode_map, "_BUILT", {})
            monkeypatch.setattr("streamdedup.sketch.fingerprint.built_tables", lambda *a: None)
        fp = Fingerprinter(load_config(environ={}).fingerprint)
        calls = []
        kernel = fp._kernel
        monkeypatch.setattr(fp, "_kernel", lambda *a: calls.append(1) or kernel(*a))
        got = fp.fingerprint_batch(texts)
        assert len(calls) == (1 if built else 2)
        assert (got.minhash == want.minhash).all() and (got.digest_words == want.digest_words).all()
