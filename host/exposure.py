"""Who may reach a soulstack server: the LAN rule and the browser guard (docs/security.md).

Two kinds of stranger can reach a server on the owner's machine:

- **another machine on the network**, when the server listens beyond loopback.
  Such an address needs a token: `exposure_problem` makes `listening` refuse
  to start without one, unless the owner says `--insecure-no-token`.
- **a web page in the owner's own browser**, which can send requests to
  127.0.0.1 from any site. Three rules keep it out, checked by `browser_guard`
  before any route (and `read_json`'s Content-Type rule):
  - a `Host` header must be an IP address, `localhost` (or a name under it),
    this machine's own name, or a name in `SOULSTACK_ALLOWED_HOSTS`; a page on
    a rebinding DNS name (evil.example resolving to 127.0.0.1) sends its own
    name and is answered 421;
  - a request that changes something (any method but GET, HEAD, OPTIONS) with
    a browser's `Origin` must come from the server's own origin (what the
    `Host` names) or one in `SOULSTACK_ALLOWED_ORIGINS`; otherwise 403;
  - a JSON body only as `application/json` (serving.read_json): a form or
    `text/plain` post, which a page may send without asking, is never read.

Programs (bodies, the SDKs, curl) send no `Origin`, so they are untouched.
Both lists are comma-separated and read when a server's app is built.
"""

import ipaddress
import logging
import os
import socket
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Middleware

ALLOWED_HOSTS_ENV = "SOULSTACK_ALLOWED_HOSTS"
ALLOWED_ORIGINS_ENV = "SOULSTACK_ALLOWED_ORIGINS"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
LOG_EVERY_S = 60  # a page retrying in a loop must not flood the log; the count says how many

log = logging.getLogger(__name__)
DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Exposure:
    """Whether a token guards an app, and the words that tell an owner how to set one."""

    locked: bool
    how_to_lock: str = "--token-file FILE"


def is_loopback(host: str) -> bool:
    """Whether listening on `host` keeps the server to this machine ('' and 0.0.0.0 do not)."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any address


def exposure_problem(host: str, exposure: Exposure, insecure_no_token: bool) -> str | None:
    """Why an app must not listen on `host`, or None."""
    if is_loopback(host) or exposure.locked or insecure_no_token:
        return None
    shown = host or "every address"
    return (
        f"refusing to listen on {shown} without a token: anyone on the network could use this server; "
        f"set one with {exposure.how_to_lock}, listen on 127.0.0.1, "
        "or pass --insecure-no-token if that is really what you want"
    )


def insecure_warning(host: str) -> str:
    return (
        f"listening on {host or 'every address'} with NO token (--insecure-no-token): "
        "anyone who can reach this address can use it"
    )


def _names(env: str) -> set[str]:
    return {name.strip().lower().rstrip("/") for name in os.environ.get(env, "").split(",") if name.strip()}


def own_names() -> set[str]:
    """The names this machine answers to without being told: its host name, bare and under .local."""
    names = set()
    for name in (socket.gethostname(), socket.getfqdn()):
        name = name.lower().rstrip(".")
        if name:
            names |= {name, name.split(".")[0] + ".local"}
    return names


def split_host(value: str) -> tuple[str, int | None]:
    """'Name:8470' -> ('name', 8470); '[::1]:9202' -> ('::1', 9202); a port that is no number -> None."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif value.count(":") == 1:
        name, _, port_text = value.partition(":")
    else:
        name, port_text = value, ""  # a bare IPv6 address or a plain name
    port = int(port_text) if port_text.isdigit() else None
    return name.rstrip("."), port


def host_allowed(name: str, allowed: set[str]) -> bool:
    """An IP literal cannot be a rebinding name; `localhost` and names under it never leave the machine."""
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    return name == "localhost" or name.endswith(".localhost") or name in allowed


def same_origin(origin: str, host_header: str) -> bool:
    """Whether a browser's Origin is the server's own: the same name and port the Host header names."""
    try:
        parts = urlsplit(origin.strip().lower())  # raises on an unclosed IPv6 bracket (http://[::1)
        if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
            return False  # "null" (a sandboxed frame, a file:// page) is never ours
        origin_port = parts.port or DEFAULT_PORTS[parts.scheme]  # raises on a bad port
    except ValueError:
        return False
    name, port = split_host(host_header)
    return parts.hostname.strip("[]") == name and origin_port == (port or DEFAULT_PORTS[parts.scheme])


class BrowserGuard:
    """The middleware behind `browser_guard`, holding the owner's lists once read."""

    def __init__(self):
        self.allowed_hosts = own_names() | _names(ALLOWED_HOSTS_ENV)
        self.allowed_origins = _names(ALLOWED_ORIGINS_ENV)
        self.logged_at: dict[int, float] = {}
        self.unlogged: dict[int, int] = {}

    def note(self, request: web.Request, status: int, message: str):
        """Log a refusal, at most once a minute per kind: an attack attempt leaves a trace."""
        now = time.monotonic()
        if now - self.logged_at.get(status, -LOG_EVERY_S) < LOG_EVERY_S:
            self.unlogged[status] = self.unlogged.get(status, 0) + 1
            return
        more = self.unlogged.pop(status, 0)
        self.logged_at[status] = now
        log.warning(
            "refused %s %s from %s (%d): %s%s",
            request.method,
            request.path,
            request.remote,
            status,
            message.split(";")[0],
            f" (and {more} more since the last such line)" if more else "",
        )

    def problem(self, request: web.Request) -> tuple[int, str] | None:
        host_header = request.headers.get("Host")
        if host_header is not None:  # a browser always sends one; an old HTTP/1.0 client may not
            name, _ = split_host(host_header)
            if not host_allowed(name, self.allowed_hosts):
                return 421, (
                    f"this server does not answer to the name {name[:80]!r} (a page on another site may "
                    f"be trying to reach it); to use that name, add it to {ALLOWED_HOSTS_ENV}"
                )
        origin = request.headers.get("Origin")
        if request.method in SAFE_METHODS or origin is None:
            return None
        if same_origin(origin, host_header or "") or origin.strip().lower().rstrip("/") in self.allowed_origins:
            return None
        return 403, (
            f"refused a {request.method} from the web page at {origin[:80]!r}: only this server's own "
            f"page may change things here; to allow that page, add its origin to {ALLOWED_ORIGINS_ENV}"
        )


def browser_guard(answer) -> Middleware:
    """The middleware for one app; the owner's lists are read now, as the app is built.
    `answer(request, status, message)` builds a refusal (the serving layer's error answer)."""
    guard = BrowserGuard()

    @web.middleware
    async def middleware(request: web.Request, handler):
        refusal = guard.problem(request)
        if refusal:
            guard.note(request, *refusal)
            return answer(request, *refusal)
        return await handler(request)

    return middleware
