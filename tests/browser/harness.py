"""The web inspector in a real browser: Debian's chromium driven by Playwright (never a
downloaded browser), the server in a thread on a free loopback port, a file-mode run to look at.

Used by the browser tests, the Kafka one in tests/integration and scripts/ui_screenshots.py;
the ``browser`` and ``page`` fixtures are registered once, in tests/conftest.py (one Playwright
per session). Heavier imports wait until used: every test session imports this module.
"""

from __future__ import annotations

import shutil
import socket
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import orjson
import pytest

from streamdedup import load_config

#: Debian's chromium in a container: no sandbox (no user namespaces), no GPU, nothing fetched
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
XSS_ID = "x<script>window.__xss=1</script>"
#: the hostile copy's tail says "not": a revision, which would go to the unique output; these
#: pages are about duplicates (revisions on the overview: tests/unit/test_overview.py)
NO_REVISIONS = {"STREAMDEDUP_VERIFY__REVISIONS": "off"}
XSS_TAIL = "<script>window.__xss=2</script> <img src=x onerror=\"window.__xss=3\"> & <b>not bold</b>"


def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        raise RuntimeError("chromium is not installed: the browser tests drive Debian's chromium "
                           "(apt-get install chromium; make system-deps does it)")
    return path


@contextmanager
def launch(playwright):
    browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture(scope="session")
def browser():
    """Debian's chromium, once per session. A missing chromium or playwright is a failure, not a
    skip: these tests are the only evidence that the pages work in a browser."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: make venv installs it (the dev group)")
    try:
        with sync_playwright() as p, launch(p) as b:
            yield b
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    yield pg
    context.close()


@contextmanager
def serve(inspector) -> Iterator[str]:
    """The inspector's app (:class:`streamdedup.tools.ui.app.Inspector`) served by uvicorn in a
    thread; yields its base URL."""
    import uvicorn

    from streamdedup.tools.ui.app import create_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(inspector), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the inspector's server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()


def feed(n: int = 12) -> list[dict]:
    """Stories, a copy after every third (two words misspelt, a tail appended: a copy, not a
    revision), and a copy whose
    id and text carry markup and scripts (records are untrusted input)."""
    from tests.unit.test_engine import story

    records = []
    for k in range(n):
        records.append({"id": f"s{k}", "text": story(100 + k, 200)})
        if k % 3 == 1:
            words = records[-1]["text"].split()
            words[10:12] = [w + "q" for w in words[10:12]]
            records.append({"id": f"c{k}", "text": " ".join(words) + " extra tail"})
    records.append({"id": XSS_ID, "text": records[0]["text"] + " " + XSS_TAIL})
    return records


def file_run(tmp: Path, records: list[dict] | None = None) -> tuple[Path, Path, list[dict]]:
    """A file-mode run over ``records`` (default :func:`feed`): (input file, output dir, records)."""
    from streamdedup.runtime.filemode import run_file

    records = feed() if records is None else records
    inp = tmp / "in.jsonl"
    inp.write_bytes(b"\n".join(orjson.dumps(r) for r in records) + b"\n")
    out = tmp / "out"
    run_file(load_config(environ=NO_REVISIONS), str(inp), str(out))
    return inp, out, records


@contextmanager
def serve_file_run(inp: Path, out: Path, page_size: int = 2) -> Iterator[str]:
    """The inspector over a file-mode run's outputs (the what-if replays its input), served;
    yields its base URL."""
    from streamdedup.tools.inspection.file_source import FileDuplicates
    from streamdedup.tools.ui.app import Inspector
    from streamdedup.tools.ui.whatif_form import WhatIfInput

    cfg = load_config(environ={})
    source = FileDuplicates(out, cfg, inp)
    try:
        with serve(Inspector(cfg, source, f"file mode: {out}", WhatIfInput(str(inp), ()), page_size=page_size)) as url:
            yield url
    finally:
        source.close()


def follow(page, selector: str) -> None:
    """Click a link and wait for the page it opens: reading the DOM right after a click may
    see the old page, or none (a paging loop then stopped early: seen once on Kafka)."""
    with page.expect_navigation():
        page.click(selector)
