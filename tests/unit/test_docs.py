"""The documentation site builds strictly, every page is in its navigation, the README's links
resolve, and the user-facing docs speak about the product: no internal issue numbers and no
development diary."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
USER_DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted(DOCS.rglob("*.md"))]

#: references to this project's own issues and pull requests ("issue 12", "issues 11 and 17", "#12")
ISSUE_NUMBER = re.compile(r"\b(?:issues?|PR|pull request)\s*#?\d+|(?<![\w&/#-])#\d+\b", re.IGNORECASE)
#: how a development log talks; the docs say what the product does, measured where and how
DIARY = re.compile(r"\bsessions?\b|\bthis (?:evening|morning|machine)\b|\bin one evening\b|\bslow and fast phases\b"
                   r"|\bseeds? 0\d\d\b|\bwork in progress\b|\bnot built yet\b", re.IGNORECASE)


class _Loader(yaml.SafeLoader):
    """mkdocs.yml names a Python function (the Mermaid fence); reading the nav needs none of it."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def _nav_pages(nav: list) -> set[str]:
    out: set[str] = set()
    for item in nav:
        for value in (item.values() if isinstance(item, dict) else [item]):
            out |= _nav_pages(value) if isinstance(value, list) else {value}
    return out


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """A broken internal link or anchor, or a nav entry without its page, is a warning, and
    --strict makes any warning fail the build."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f", str(ROOT / "mkdocs.yml"),
                             "-d", str(tmp_path / "site")], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "reference" / "configuration" / "index.html").exists()


def test_every_page_is_in_the_navigation() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert _nav_pages(config["nav"]) == pages


def test_the_readme_links_resolve() -> None:
    """GitHub shows the README with links into docs/; mkdocs does not check those."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [link.split("#")[0] for link in links if not re.match(r"[a-z]+:", link) and not link.startswith("#")]
    assert local, "the README links into the docs"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert missing == []


@pytest.mark.parametrize("path", USER_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_docs_name_no_issue_numbers_and_keep_no_diary(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert ISSUE_NUMBER.findall(text) == [], f"{path.name}: describe the capability, not the issue"
    assert DIARY.findall(text) == [], f"{path.name}: development history belongs in git, measurements in docs/benchmarks.md"


def test_the_patterns_catch_what_they_are_for() -> None:
    assert ISSUE_NUMBER.search("done in issue 13") and ISSUE_NUMBER.search("see #12") and ISSUE_NUMBER.search("issues 11 and 17")
    assert not ISSUE_NUMBER.search("[the runbook](operations.md#lost-state)") and not ISSUE_NUMBER.search("&#1234;")
    assert DIARY.search("six runs in one evening") and DIARY.search("(seed 002)") and DIARY.search("after session 8")
    assert not DIARY.search("--seed 23") and not DIARY.search("each page took under 0.5 s")


def test_operations_documents_every_metric_family() -> None:
    """The metrics table cannot fall behind the code: every family the processor, the staged
    decider and the workers register (one Metrics class) is named on the operations page."""
    from streamdedup.runtime.kafka.metrics import Metrics

    metrics = Metrics(0)
    families = {m.name for m in metrics.registry.collect()}
    page = (DOCS / "operations.md").read_text(encoding="utf-8")
    assert len(families) >= 7
    # prometheus_client reports counters without their _total suffix
    missing = [f for f in families if f"`{f}`" not in page and f"`{f}_total`" not in page]
    assert missing == []
