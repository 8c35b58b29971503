"""Non-ASCII canonical form in the kernel (unicode_map tables) equals canonicalize() exactly."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streamdedup import Fingerprinter, load_config
from streamdedup.text.canonical import canonicalize
from streamdedup.config import CanonicalConfig
from streamdedup.text.unicode_map import tables

FP = Fingerprinter(load_config().fingerprint)

# Characters where per-character NFKC differs from whole-text NFKC, or nearly: combining marks
# of several classes (acute 230, dot below 220, cedilla 202, Hebrew and Arabic points), Hangul
# jamo and compatibility jamo, a composite of two marks (U+0344), a Tibetan vowel, Thai marks,
# Kelvin and Angstrom signs, ligatures, fractions, full-width forms, a variation selector and
# a plane-14 tag (past the tables), Greek final sigma, dotted capital I.
TRICKY = ("e\u0301\u0323\u0327aAYoO\u0308\u0344\u05b0\u05b4\u064b\u0650\u1100\u1161\u11a8\u3131\u314f\u0f73\u0f71"
          "\u0e01\u0e38\u0e48\u0e33\u212a\u212b\ufb01\u00bd\uff21\uff0c\ufe0f\U000e0041\u03c2\u0130\u00df"
          "\u4e2d\u570b\u3002 ,.-"
          # Traditional Chinese (folded by default), and what NFKC turns into Han or kana: a
          # compatibility ideograph, a Kangxi radical, an era square, a circled and a half-width katakana
          "國務院發表賀詞瞭解後\uf900\u2f00\u337b\u32d0\uff71アあ")


@settings(max_examples=600)
@given(st.lists(st.text(st.sampled_from(TRICKY), max_size=12), min_size=1, max_size=5))
def test_kernel_canonical_form_equals_python_on_tricky_unicode(texts: list[str]) -> None:
    b = FP.fingerprint_batch(texts)
    for i, t in enumerate(texts):
        assert b.canonical[i] == canonicalize(t, FP.cfg.canonical).encode("utf-8"), ascii(t)


@given(st.text(st.sampled_from(TRICKY), max_size=20), st.booleans(), st.booleans(), st.booleans(),
       st.sampled_from(["auto", "on", "off"]))
def test_every_canonical_setting(text: str, nfkc: bool, casefold: bool, punct: bool, fold: str) -> None:
    cfg = load_config().fingerprint.model_copy(update={"canonical": CanonicalConfig(
        nfkc=nfkc, casefold=casefold, punctuation_to_space=punct, strip_html=False, fold_traditional=fold)})
    b = Fingerprinter(cfg).fingerprint_batch([text])
    assert b.canonical[0] == canonicalize(text, cfg.canonical).encode("utf-8"), ascii(text)


def test_replacements_are_fixed_points() -> None:
    """Texts canonicalised in Python go through the tables again: they must not change them."""
    u = tables(True, True, True)
    for r in range(u.repl_off.shape[0] - 1):
        text = u.repl[u.repl_off[r]:u.repl_off[r + 1]].tobytes().decode("utf-8")
        for ch in text:
            assert ch.isascii() and (ch == " " or ch.isalnum() and not ch.isupper()) or u.umap[ord(ch)] == -1, (r, ascii(text))


def test_chinese_punctuation_and_full_width_forms() -> None:
    text = "新华社北京１月１日电（记者 张三）国家主席：“ＡＢＣ”。"
    b = FP.fingerprint_batch([text])
    assert b.canonical[0].decode() == "新华社北京1月1日电 记者 张三 国家主席 abc"


def _same(a, b) -> bool:
    import numpy as np

    return all(np.array_equal(x, y) and x.dtype == y.dtype for x, y in zip(a, b))


def test_tables_come_from_the_disk_cache_equal_to_a_build(tmp_path, monkeypatch) -> None:
    """Built once and saved beside the kernel cache; a new process (here: a cleared memo) loads
    the file without building and gets the same arrays, read-only and readable by other users;
    a file cut short is rebuilt over; other settings are another file; an unwritable directory
    costs the build."""
    from streamdedup.text import table_cache, unicode_map

    build = unicode_map._build

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(unicode_map, "_BUILT", {})
    key = (True, True, True, False)
    built = unicode_map.tables(*key)
    files = list((tmp_path / "cache" / "streamdedup-text").glob("unicode-tables-*.npz"))
    assert len(files) == 1
    assert files[0].stat().st_mode & 0o777 == 0o644
    unicode_map._BUILT.clear()

    def no_build(*args):
        raise AssertionError("built although the cache holds the tables")

    monkeypatch.setattr(unicode_map, "_build", no_build)
    loaded = unicode_map.tables(*key)
    monkeypatch.setattr(unicode_map, "_build", build)
    assert _same(loaded, built) and _same(loaded, build(*key))
    assert not any(a.flags.writeable for a in loaded)
    files[0].write_bytes(files[0].read_bytes()[:100])  # cut short (a crash mid-write elsewhere)
    unicode_map._BUILT.clear()
    assert _same(unicode_map.tables(*key), built)
    assert files[0].stat().st_size > 1000  # written again whole
    other = (True, False, True, False)
    assert table_cache.digest(other) != table_cache.digest(key)
    assert _same(unicode_map.tables(*other), unicode_map._build(*other))
    locked = tmp_path / "locked"
    locked.write_text("a file where the directory would be")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(locked))
    unicode_map._BUILT.clear()
    assert _same(unicode_map.tables(*key), built)
