"""The web inspector's Starlette application: pages rendered on the server from the reader.

Every page reads a bounded number of records (a page of the list, the window of the counts and
clusters, one duplicate and its originals), never a whole topic: with a few hundred thousand
records in the topics a page still takes well under a second (``benchmarks/ui_pages.py``).
The source (a Kafka consumer, or open files) serves one request at a time (a lock): the
reader's consumer is not thread-safe, and an inspector has one user.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Sequence
from urllib.parse import parse_qs

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from streamdedup.config import Config
from streamdedup.errors import StreamdedupError
from streamdedup.sketch.fingerprint import Fingerprinter
from streamdedup.tools.inspection.overview import Summary, summarise
from streamdedup.tools.inspection.pair import ELIDED, Doc, side
from streamdedup.tools.inspection.reader import DuplicateSource, Filter, clusters, pairs
from streamdedup.tools.ui import charts, views
from streamdedup.tools.ui.guard import LOOPBACK_NAMES, FormGuard, read_capped
from streamdedup.tools.ui.views import BadQuery, ListQuery, cursor_text, parse_cursor
from streamdedup.tools.ui.whatif_form import MAIN_FLIPS, WhatIfInput, run_whatif

HERE = Path(__file__).parent
#: windows the clusters page offers (duplicates read, newest first)
CLUSTER_WINDOWS = (1_000, 5_000, 10_000)
#: windows the overview offers (the newest records read of each output): 10,000 of each of three
#: topics took ~0.6 s with 200k records in them, 50,000 2-3 s (benchmarks/ui_pages.py)
OVERVIEW_WINDOWS = (1_000, 5_000, 10_000)
#: the list's query parameters: ``/`` with one of them is an old link to the list
LIST_PARAMS = frozenset({"relation", "min", "max", "id", "before", "after"})
#: a what-if form is a few settings: a larger body is cut here
MAX_FORM_BYTES = 64 * 1024


def templates() -> Jinja2Templates:
    # autoescape everything: record texts and ids are untrusted input shown in HTML
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    env.globals.update(fig=views.fig, when=views.when, count=views.count, ELIDED=ELIDED, MAIN_FLIPS=MAIN_FLIPS,
                       RELATIONS=views.RELATIONS)
    return Jinja2Templates(env=env)


class Inspector:
    """What the pages show, read from one source.

    Args:
        label: where the duplicates come from, for the page header.
        page_size: duplicates per list page.
        max_scan: records read at most for one list page (a narrow filter shows fewer, and the
            "older" link goes on from where the read stopped).
        recent: duplicates read for the relation counts (newest first).
    """

    def __init__(self, cfg: Config, source: DuplicateSource, label: str, whatif: WhatIfInput, page_size: int = 25,
                 max_scan: int = 10_000, recent: int = 2_000, fp: Fingerprinter | None = None):
        self.cfg, self.source, self.label, self.whatif = cfg, source, label, whatif
        self.page_size, self.max_scan, self.recent = page_size, max_scan, recent
        self.fp = fp or Fingerprinter(cfg.fingerprint)
        self.lock = threading.Lock()
        self.replay_lock = threading.Lock()
        self._relations: tuple[int | None, Counter, int] | None = None
        self._overview: tuple[tuple, Summary] | None = None

    def counts(self) -> dict:
        """Records per output now, and relations among the newest ``recent`` duplicates (read
        again only when the duplicates output has grown)."""
        totals = self.source.totals()
        dup = totals.get("duplicate")
        if self._relations is None or self._relations[0] != dup:
            page = self.source.older(None, self.recent, Filter(), self.recent)
            self._relations = (dup, Counter(e.tags.relation or "?" for e in page.entries), len(page.entries))
        _, relations, window = self._relations
        return {"totals": totals, "relations": relations.most_common(), "window": window,
                "exact": self.source.totals_exact}

    def overview(self, window: int) -> dict:
        """Totals now, and the figures of the newest ``window`` records of each output (read
        again only when an output has grown)."""
        totals = self.source.totals()  # not counts(): its relations come from the samples here
        key = (window, *sorted(totals.items()))
        if self._overview is None or self._overview[0] != key:
            samples = [self.source.recent(output, window) for output in ("unique", "duplicate", "dead_letter")]
            own = self.source.recent("revision", window) if self.cfg.verify.revisions == "topic" else None
            self._overview = (key, summarise(*samples, window, own))
        s = self._overview[1]
        v = self.cfg.verify
        return {"totals": totals, "exact": self.source.totals_exact, "s": s, "windows": OVERVIEW_WINDOWS, "charts": charts.overview_charts(s, v),
                "time_meaning": self.source.time_meaning}

    def list_page(self, q: ListQuery, before: str, after: str) -> dict:
        filt = q.filter()
        if after:
            start = parse_cursor(after)
            page = self.source.read(start, self.page_size, filt, self.max_scan)
            older, newer = start, page.next
            has_newer, has_older = not page.at_end, True
        else:
            stop = parse_cursor(before) if before else None
            page = self.source.older(stop, self.page_size, filt, self.max_scan)
            older, newer = page.next, stop
            has_newer, has_older = stop is not None, not page.at_end
        return {"entries": page.entries[::-1], "scanned": page.scanned, "q": q, "has_time": _has_time(page.entries),
                "older": q.params(before=cursor_text(older)) if has_older else None,
                "newer": q.params(after=cursor_text(newer)) if has_newer and newer is not None else None,
                "newest": not (before or after)}

    def pair(self, partition: int, offset: int, context: int) -> dict:
        entry = self.source.entry_at(partition, offset)
        if entry is None:
            raise HTTPException(404, f"no duplicate at partition {partition}, offset {offset}")
        if isinstance(entry.doc, str):
            return {"entry": entry, "p": None}
        p = pairs(self.source, [entry], self.cfg, self.fp)[0]
        columns = []
        if not p.matched_is_root:
            columns.append(("matched (decided)", p.matched, p.tags.matched, p.matched_diff, p.why))
        columns.append(("original (root)", p.original, p.tags.duplicate_of, p.diff,
                        p.why if p.matched_is_root else p.why_original))
        sides = [(role, doc, want, None if d is None else side(d, "earlier", context),
                  None if d is None else side(d, "copy", context), why) for role, doc, want, d, why in columns]
        return {"entry": entry, "p": p, "sides": sides, "checks": views.threshold_checks(self.cfg.verify, p.why),
                "context": context}

    def clusters(self, window: int) -> dict:
        page = self.source.older(None, window, Filter(), window)
        found = clusters(page.entries)
        return {"clusters": found[:200], "roots": len(found), "read": len(page.entries), "window": window,
                "has_time": any(c.first_ms is not None for c in found),
                "windows": CLUSTER_WINDOWS}


def _has_time(entries) -> bool:
    """Whether any entry has a record time (file-mode outputs without input.time_field have none)."""
    return any(isinstance(e.doc, Doc) and e.doc.time_ms is not None for e in entries)


async def _form_body(request: Request) -> str:
    """The what-if form's body, read no further than :data:`MAX_FORM_BYTES`."""
    body = await read_capped(request, MAX_FORM_BYTES)
    if body is None:
        raise HTTPException(413, f"a what-if form is at most {MAX_FORM_BYTES:,} bytes")
    return body.decode("utf-8", "replace")


def _error_page(tpl: Jinja2Templates, label: str, status: int | None):
    """A handler showing the error's message with ``status`` (None: the HTTPException's own)."""
    async def handler(request: Request, exc: Exception):
        message = exc.detail if isinstance(exc, HTTPException) else str(exc)
        code = exc.status_code if status is None and isinstance(exc, HTTPException) else status or 500
        return tpl.TemplateResponse(request, "error.html", {"label": label, "page": "error", "message": message,
                                                            "server_ms": 0}, status_code=code)
    return handler


def _int(request: Request, name: str, default: int) -> int:
    return views.whole_number(name, request.query_params.get(name, ""), default)


def create_app(inspector: Inspector, hosts: Sequence[str] = LOOPBACK_NAMES, guard: FormGuard | None = None,
               api: Sequence[Route] = ()) -> Starlette:
    """The application: ``/`` the overview (charts), ``/duplicates`` the list (and search by id),
    ``/pair``, ``/clusters``, ``/whatif``.

    ``hosts``: the Host names it answers (others get a 400: DNS rebinding); ``guard``: the
    what-if form's token (a replay runs only on a POST from a page this server rendered);
    ``api``: routes of their own (``/api/query``: ``query_api``).
    """
    tpl = templates()
    ins = inspector
    guard = guard or FormGuard()

    def render(request: Request, name: str, ctx: dict, status: int = 200) -> HTMLResponse:
        t0 = time.perf_counter()
        with ins.lock:
            data = ctx.pop("_load")() if "_load" in ctx else {}
        read_s = time.perf_counter() - t0
        ctx.update(data, label=ins.label, page=name.removesuffix(".html"), server_ms=round(read_s * 1000, 1))
        response = tpl.TemplateResponse(request, name, ctx, status_code=status)  # renders here
        # the browser's dev tools (and benchmarks/ui_pages.py) show where a page's time went
        render_s = time.perf_counter() - t0 - read_s
        response.headers["Server-Timing"] = f"read;dur={read_s * 1000:.1f}, render;dur={render_s * 1000:.1f}"
        return response

    def index(request: Request):
        q = ListQuery.parse(request.query_params)
        before, after = request.query_params.get("before", ""), request.query_params.get("after", "")
        return render(request, "list.html", {"_load": lambda: {**ins.list_page(q, before, after), **ins.counts()}})

    def overview(request: Request):
        if LIST_PARAMS & request.query_params.keys():  # a link to the list from before it moved to /duplicates
            return RedirectResponse(f"/duplicates?{request.url.query}", status_code=307)
        window = _int(request, "window", OVERVIEW_WINDOWS[1])
        if window not in OVERVIEW_WINDOWS:
            raise BadQuery(f"window: one of {', '.join(map(str, OVERVIEW_WINDOWS))}")
        return render(request, "overview.html", {"_load": lambda: ins.overview(window)})

    def pair(request: Request):
        p, o = _int(request, "p", -1), _int(request, "o", -1)
        context = _int(request, "context", 30)
        return render(request, "pair.html", {"_load": lambda: ins.pair(p, o, context)})

    def clusters_page(request: Request):
        window = _int(request, "window", CLUSTER_WINDOWS[1])
        if window not in CLUSTER_WINDOWS:
            raise BadQuery(f"window: one of {', '.join(map(str, CLUSTER_WINDOWS))}")
        return render(request, "clusters.html", {"_load": lambda: ins.clusters(window)})

    def whatif_page(request: Request, fields: dict[str, str], run: bool):
        targets = ins.whatif.targets()
        form = {"settings": fields.get("settings", "verify.jaccard_threshold=0.7"), "limit": fields.get("limit", "5000"),
                "since": fields.get("since", ""), "target": fields.get("target", targets[0] if targets else "")}
        ctx = {"form": form, "targets": targets, "result": None, "error": None, "file_mode": ins.whatif.input_path,
               "token": guard.token}
        if run:
            lines = views.settings_lines(form["settings"])
            limit = views.whole_number("limit", form["limit"], 5000)
            with ins.replay_lock:  # one replay at a time: each holds its records and fingerprints
                ctx["result"] = run_whatif(ins.cfg, ins.whatif, lines, form["target"], form["since"], limit)
        return render(request, "whatif.html", ctx)

    async def whatif(request: Request):
        if request.method != "POST":  # the form, filled from the query; a replay needs the POST
            return await run_in_threadpool(whatif_page, request, dict(request.query_params), run=False)
        body = await _form_body(request)
        fields = {k: v[-1] for k, v in parse_qs(body, keep_blank_values=True).items()}
        why = guard.refusal(request.headers.get("origin"), request.headers.get("host"), request.url.scheme,
                            fields.get("token"))
        if why is not None:
            raise HTTPException(403, why)
        return await run_in_threadpool(whatif_page, request, fields, run=True)

    routes = [Route("/", overview), Route("/duplicates", index), Route("/pair", pair), Route("/clusters", clusters_page), Route("/whatif", whatif, methods=["GET", "POST"]),
              *api, Mount("/static", StaticFiles(directory=HERE / "static"), name="static")]
    return Starlette(routes=routes, exception_handlers={BadQuery: _error_page(tpl, ins.label, 400),
                                                        HTTPException: _error_page(tpl, ins.label, None),
                                                        StreamdedupError: _error_page(tpl, ins.label, 502)},
                     middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(hosts))])
