"""What the inspector serves to whom: the Host names it answers, and a same-origin check for
the requests that compute.

The inspector has no login; it listens on the loopback by default. Two attacks reach a loopback
server from a web page the operator happens to visit: a cross-site request (the page submits a
form to http://127.0.0.1:8765/whatif) and DNS rebinding (a name the attacker controls resolves to
127.0.0.1, so the page's script reads the answers as same-origin). The Host check stops the
second (a rebinding request carries the attacker's name); the token and the Origin check stop
the first for the what-if replay, the one request that costs real CPU and memory.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
from typing import Iterable

#: names a loopback server answers to whatever it was started for
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")


def allowed_hosts(host: str, extra: Iterable[str] = ()) -> list[str]:
    """The Host names to serve: the loopback's, the address listened on, ``extra``; listening
    on every interface (0.0.0.0, ::) adds this machine's own names.

    >>> allowed_hosts("127.0.0.1")
    ['localhost', '127.0.0.1', '::1', '[::1]']
    >>> allowed_hosts("10.0.0.5", ["inspector.example"])[-2:]
    ['10.0.0.5', 'inspector.example']
    """
    names = list(LOOPBACK_NAMES)
    if _unspecified(host):
        names += [socket.gethostname(), socket.getfqdn()]
    else:
        names.append(f"[{host}]" if ":" in host else host)
    names += list(extra)
    return list(dict.fromkeys(n for n in names if n))


def _unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


class FormGuard:
    """A per-server secret the what-if form carries, and the Origin check (:meth:`refusal`)."""

    def __init__(self, token: str | None = None):
        self.token = token or secrets.token_urlsafe(24)

    def refusal(self, origin: str | None, host: str | None, scheme: str, token: str | None) -> str | None:
        """Why a form submission is refused, or None. ``origin``: the request's Origin header
        (browsers send it with a POST); it must be this server's own.

        >>> g = FormGuard("t")
        >>> g.refusal("http://127.0.0.1:8765", "127.0.0.1:8765", "http", "t") is None
        True
        >>> g.refusal("http://evil.example", "127.0.0.1:8765", "http", "t")
        'cross-site request refused (Origin http://evil.example)'
        >>> g.refusal(None, "127.0.0.1:8765", "http", "x")
        'the form has expired or did not come from this inspector: reload the page'
        """
        if origin is not None and origin != "null" and origin != f"{scheme}://{host}":
            return f"cross-site request refused (Origin {origin})"
        if origin == "null" or not token or not hmac.compare_digest(token.encode(), self.token.encode()):
            return "the form has expired or did not come from this inspector: reload the page"
        return None


async def read_capped(request, limit: int) -> bytes | None:
    """A request's body, read no further than ``limit`` bytes (None past it): a page elsewhere
    can post to the inspector, and what it sends must not cost memory before it is refused."""
    declared = request.headers.get("content-length", "")
    if declared.isdecimal() and int(declared) > limit:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)
