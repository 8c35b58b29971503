"""The web inspector as an attack surface (over HTTP, as any client or a hostile page would call
it): Host names it was not started for, cross-site and token-less replays, what-if settings that
size memory, parameters that overflow. Every refusal is a 4xx with its reason, never a 500."""

from __future__ import annotations

import re
import urllib.error
import urllib.parse
import urllib.request

import pytest

from .harness import file_run, serve_file_run


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    inp, out, _ = file_run(tmp_path_factory.mktemp("hostile"))
    with serve_file_run(inp, out) as url:
        yield url


def _call(url: str, data: dict | None = None, headers: dict | None = None) -> tuple[int, str]:
    body = None if data is None else urllib.parse.urlencode(data).encode()
    req = urllib.request.Request(url, data=body, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _token(site: str) -> str:
    status, html = _call(site + "/whatif")
    assert status == 200
    return re.search(r'name="token" value="([^"]+)"', html)[1]


def test_only_the_host_names_it_was_started_for_are_served(site) -> None:
    """DNS rebinding: the attacker's name resolves to the loopback, the Host header keeps it."""
    port = urllib.parse.urlsplit(site).port
    assert _call(site + "/", headers={"Host": "evil.example"})[0] == 400
    assert _call(site + "/", headers={"Host": f"evil.example:{port}"})[0] == 400
    assert _call(site + "/", headers={"Host": f"localhost:{port}"})[0] == 200


def test_a_get_never_replays(site) -> None:
    """A link or an image on another site is a GET: it shows the form, it computes nothing."""
    status, html = _call(site + "/whatif?run=1&limit=100&settings=engine.max_documents%3D2147483647")
    assert status == 200 and 'id="result"' not in html and "2147483647" in html


def test_a_replay_needs_this_inspectors_token_and_origin(site) -> None:
    form = {"settings": "verify.jaccard_threshold=0.9", "limit": "50", "run": "1"}
    status, html = _call(site + "/whatif", form)  # a cross-site form post carries no token
    assert status == 403 and "did not come from this inspector" in html
    token = _token(site)
    status, html = _call(site + "/whatif", {**form, "token": token}, {"Origin": "http://evil.example"})
    assert status == 403 and "cross-site request refused" in html
    status, html = _call(site + "/whatif", {**form, "token": token}, {"Origin": site})
    assert status == 200 and 'id="result"' in html


@pytest.mark.parametrize(("settings", "limit", "since", "why"), [
    ("engine.max_documents=2147483647", "100", "", "engine.max_documents: at most 2,000,000"),
    ("engine.max_documents=1000000000", "100", "", "engine.max_documents: at most"),
    ("fingerprint.minhash.num_perm=1024", "100", "", "fingerprint.minhash.num_perm: at most 512"),
    ("verify.jaccard_threshold=0.9", "99999999999999999999", "", "is out of range"),
    ("verify.jaccard_threshold=0.9", "100", "99999999999999999999", "since"),
    ("verify.jaccard_threshold=0.9", "100", "-5", "since"),
    ("verify.jaccard_threshold=0.9", "1e9", "", "is not a whole number"),
    ("engine.window_hours=1e300", "100", "", "engine.window_hours"),
    ("engine.window_hours=inf", "100", "", "engine.window_hours"),
    ("verify.jaccard_threshold=nan", "100", "", "verify.jaccard_threshold"),
    ("kafka.linger_ms=18446744073709551616", "100", "", "kafka.linger_ms"),
])
def test_what_if_parameters_out_of_bounds_are_a_400_with_the_reason(site, settings, limit, since, why) -> None:
    form = {"settings": settings, "limit": limit, "since": since, "run": "1", "token": _token(site)}
    status, html = _call(site + "/whatif", form)
    assert status == 400, html[-2000:]
    assert why in html


@pytest.mark.parametrize("query", ["/pair?p=99999999999999999999&o=1", "/pair?p=0&o=-99999999999999999999",
                                   "/?before=0:99999999999999999999", "/clusters?window=99999999999999999999",
                                   "/?before=0:%C2%B2", "/?after=%C2%B2:1"])
def test_overflowing_page_parameters_are_a_400(site, query) -> None:
    status, html = _call(site + query)
    assert 400 <= status < 500, (query, status, html[-1500:])


def test_a_form_too_large_or_a_foreign_token_is_refused_without_a_500(site) -> None:
    """A page elsewhere can post to the loopback: a large body is refused before it is read
    whole, a token of any characters is compared safely."""
    big = {"settings": "x" * 200_000, "token": "t"}
    assert _call(site + "/whatif", big)[0] == 413
    status, html = _call(site + "/whatif", {"settings": "verify.jaccard_threshold=0.9", "token": "ünïcode", "run": "1"})
    assert status == 403 and "did not come from this inspector" in html
