"""The browser tier: the web inspector in Debian's chromium, driven by Playwright.

A missing chromium or playwright is a failure, not a skip: these tests are the only evidence
that the pages work in a browser.
"""

from __future__ import annotations

import pytest

from .harness import launch


@pytest.fixture(scope="session")
def browser():
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


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser" in str(item.fspath):
            item.add_marker(pytest.mark.browser)
