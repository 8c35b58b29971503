"""The browser tier: the web inspector in Debian's chromium, driven by Playwright (the
fixtures are :mod:`.harness`'s, registered in tests/conftest.py)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser" in str(item.fspath):
            item.add_marker(pytest.mark.browser)
