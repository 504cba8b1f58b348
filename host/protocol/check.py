"""body-check: is this URL a body that keeps Body Protocol v1?

`run_checks(url, token, endpoints)` talks raw HTTP to the body (so it can send
what a polite client never would: broken JSON, GET, no token) and returns one
`CheckResult` per rule.

Two levels. The v1 rules (what the seed says a body MUST do, plus honesty: the
right shapes, `online` that is true, no fake success) decide PASS/FAIL. Our
stricter rules (refuse GET, malformed JSON, wrong shapes and a missing token,
ignore extra fields) are `strict`: a body from elsewhere that breaks only those
still keeps v1, so they WARN unless `--strict` makes them fail. Shapes are judged by `soulstack.protocol.shapes`, the same
code every body and the soul use. `soulstack body-check` prints the results;
`tools/flash` and the tests call `run_checks` directly.
"""

import asyncio
import json
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp

from soulstack.protocol import shapes as protocol

STATUS_WITHIN_S = 5.0
ACT_WITHIN_S = 60.0

# A valid request per endpoint, and one of the wrong shape (valid JSON, wrong fields).
GOOD = {
    "status": {},
    "look": {"question": "what is in front of you?"},
    "speak": {"text": "body-check is testing my voice."},
    "express": {"emotion": "happy"},
}
WRONG_SHAPE = {
    "status": [],
    "look": {"question": 7},
    "speak": {},
    "express": {},
}
MALFORMED_JSON = b'{"text": "unfinished'
# What a web page on another site sends: its Origin, or a body it may post without asking first.
FOREIGN_PAGE = {"Origin": "http://body-check.invalid"}
PLAIN_TEXT = {"Content-Type": "text/plain"}


@dataclass
class CheckResult:
    name: str
    passed: bool
    detail: str
    strict: bool = False  # one of our stricter rules, not a v1 MUST

    def fails(self, strict: bool = False) -> bool:
        """Whether this result fails the body: a v1 rule always, a stricter one only under --strict."""
        return not self.passed and (strict or not self.strict)

    def line(self, strict: bool = False) -> str:
        level = "PASS" if self.passed else ("FAIL" if self.fails(strict) else "WARN")
        return f"{level}  {self.name}: {self.detail}"


@dataclass
class Answer:
    status: int  # 0 when no HTTP answer came back
    body: object  # parsed JSON, or None
    text: str
    seconds: float
    problem: str = ""  # why there was no answer


def _describe(answer: Answer) -> str:
    if answer.status == 0:
        return answer.problem
    shown = answer.text.strip().replace("\n", " ")
    return f"{answer.status} {shown[:120]}" if shown else str(answer.status)


class Prober:
    """Raw HTTP to one body, remembering nothing between calls."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str, token: str | None):
        self.session = session
        self.base_url = base_url.rstrip("/")
        self.token = token

    async def send(
        self,
        endpoint,
        payload=None,
        *,
        raw: bytes | None = None,
        method="POST",
        token="default",
        timeout_s=ACT_WITHIN_S,
        headers: dict | None = None,
    ) -> Answer:
        token = self.token if token == "default" else token
        headers = {"Content-Type": "application/json", **(headers or {})}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = raw if raw is not None else (None if payload is None else json.dumps(payload).encode())
        started = time.monotonic()
        try:
            async with self.session.request(
                method,
                f"{self.base_url}/{endpoint}",
                data=data,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=timeout_s),
            ) as response:
                text = await response.text(errors="replace")
                try:
                    body = await response.json(content_type=None)
                except ValueError:
                    body = None
                return Answer(response.status, body, text, time.monotonic() - started)
        except TimeoutError:
            return Answer(0, None, "", time.monotonic() - started, f"no answer within {timeout_s:g} s")
        except aiohttp.ClientError as error:
            return Answer(0, None, "", time.monotonic() - started, f"no answer ({error})")


# --- the checks ---------------------------------------------------------------


def _token_hint(answer: Answer, token: str | None) -> str:
    if answer.status not in (401, 403):
        return ""
    return " (is --token the body's token?)" if token else " (does the body need --token?)"


def _shape_check(name, endpoint, answer: Answer, within_s: float, token: str | None) -> CheckResult:
    """A 2xx answer in time whose body has the shape `endpoint` answers."""
    if answer.status == 0:
        return CheckResult(name, False, _describe(answer))
    if not 200 <= answer.status < 300:
        return CheckResult(name, False, f"expected 2xx, got {_describe(answer)}{_token_hint(answer, token)}")
    if answer.body is None:
        return CheckResult(name, False, f"answered {answer.status} without a JSON body: {answer.text[:80]!r}")
    try:
        clean = protocol.validate_response(endpoint, answer.body)
    except protocol.ProtocolError as error:
        return CheckResult(name, False, f"wrong shape: {error}")
    if answer.seconds > within_s:
        return CheckResult(name, False, f"answered after {answer.seconds:.1f} s; must answer within {within_s:g} s")
    return CheckResult(name, True, f"{_summarize(endpoint, clean)} in {answer.seconds * 1000:.0f} ms")


def _summarize(endpoint, clean: dict) -> str:
    if endpoint == "status":
        return f"online: {str(clean['online']).lower()}"
    if endpoint == "look" and "text" in clean:
        return f"text, {len(clean['text'])} characters"
    if endpoint == "look":
        return f"{clean['mimeType']}, {len(clean['image']) * 3 // 4} bytes"
    return "2xx with a JSON object"


def _refusal_check(name, answer: Answer, allowed=range(400, 500), what="4xx", token=None) -> CheckResult:
    """The body should refuse with a status in `allowed`; a 2xx is a fake success, a 5xx a crash.

    Every refusal is one of our stricter rules. A 401/403 to a request that
    carried the right token refuses the token, not the request, so it proves
    nothing about the rule being checked.
    """
    if answer.status in (401, 403) and what == "4xx":
        return CheckResult(
            name,
            False,
            f"refused with {answer.status}: the token, not the request{_token_hint(answer, token)}",
            strict=True,
        )
    if answer.status in allowed:
        return CheckResult(name, True, f"refused with {answer.status}", strict=True)
    if answer.status == 0:
        return CheckResult(name, False, f"expected {what}, {_describe(answer)}", strict=True)
    if 200 <= answer.status < 300:
        return CheckResult(name, False, f"expected {what}, got {answer.status}: a fake success", strict=True)
    return CheckResult(name, False, f"expected {what}, got {_describe(answer)}", strict=True)


async def _endpoint_checks(
    probe: Prober, endpoint: str, first: Answer, token: str | None, within: float
) -> list[CheckResult]:
    """Every rule for one endpoint; `first` is its answer to a good request."""
    results = [_shape_check(f"{endpoint} answers", endpoint, first, within, token)]
    if endpoint == "status":
        answer = await probe.send("status", {"future": "field"}, timeout_s=within)
        extra = _shape_check("status ignores extra fields", "status", answer, within, token)
        extra.strict = True
        results.append(extra)
    if endpoint == "express":
        answer = await probe.send("express", {"emotion": "bewildered-by-body-check"})
        results.append(_shape_check("express accepts an unknown emotion", "express", answer, within, token))
    results.append(
        _refusal_check(
            f"{endpoint} refuses malformed JSON", await probe.send(endpoint, raw=MALFORMED_JSON), token=token
        )
    )
    results.append(
        _refusal_check(
            f"{endpoint} refuses the wrong shape", await probe.send(endpoint, WRONG_SHAPE[endpoint]), token=token
        )
    )
    results.append(_refusal_check(f"{endpoint} refuses GET", await probe.send(endpoint, method="GET"), token=token))
    # A page can post text/plain to the body's address without a preflight, and one under a
    # rebinding name can read the answer: a body must not take either (docs/security.md).
    plain = await probe.send(endpoint, GOOD[endpoint], headers=PLAIN_TEXT)
    results.append(_refusal_check(f"{endpoint} refuses a web page's plain text", plain, token=token))
    page = await probe.send(endpoint, GOOD[endpoint], headers=FOREIGN_PAGE)
    results.append(_refusal_check(f"{endpoint} refuses a page on another site", page, (403,), "403"))
    if token:
        auth = (401, 403)
        results.append(
            _refusal_check(
                f"{endpoint} refuses no token", await probe.send(endpoint, GOOD[endpoint], token=None), auth, "401/403"
            )
        )
        wrong = await probe.send(endpoint, GOOD[endpoint], token=token + "-wrong")
        results.append(_refusal_check(f"{endpoint} refuses a wrong token", wrong, auth, "401/403"))
    return results


async def _reachable(url: str, timeout_s: float) -> str | None:
    """Why nothing listens at `url`, or None when a TCP connection opens."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(parts.hostname, port), timeout_s)
    except (TimeoutError, OSError) as error:
        return f"nothing answers at {parts.hostname}:{port} ({error or 'timed out'})"
    writer.close()
    return None


async def run_checks(
    url: str, token: str | None = None, endpoints=protocol.ENDPOINTS, status_within_s: float = STATUS_WITHIN_S
) -> list[CheckResult]:
    """Every check for the body at `url` (its base URL, e.g. http://127.0.0.1:9310)."""
    problem = await _reachable(url, STATUS_WITHIN_S)
    if problem:
        return [CheckResult("reach the body", False, problem)]
    results: list[CheckResult] = []
    async with aiohttp.ClientSession() as session:
        probe = Prober(session, url, token)
        for endpoint in endpoints:
            within = status_within_s if endpoint == "status" else ACT_WITHIN_S
            first = await probe.send(endpoint, GOOD[endpoint], timeout_s=within)
            if not results and (first.status == 404 or first.problem.startswith("no answer (")):
                # Nothing at this URL speaks the protocol (wrong path, https to an
                # http body...): one line says so, not a screen of failures.
                hint = (
                    f"does it serve /{endpoint}? (--endpoints lists what it does)" if first.status else "plain http://?"
                )
                return [
                    CheckResult(
                        "reach the body",
                        False,
                        f"POST {url}/{endpoint}: {_describe(first)}; is {url} the body's base URL, {hint}",
                    )
                ]
            results += await _endpoint_checks(probe, endpoint, first, token, within)
    return results


def endpoint_in_url(url: str) -> str | None:
    """A URL that ends in an endpoint (…/status) is a common slip: name the base URL instead."""
    path = urlsplit(url).path.rstrip("/")
    for endpoint in protocol.ENDPOINTS:
        if path.endswith("/" + endpoint):
            base = url.rstrip("/")[: -len(endpoint) - 1]
            return f"{url} names the /{endpoint} endpoint; give the body's base URL: {base}"
    return None


def summary(url: str, results: list[CheckResult], strict: bool = False) -> str:
    failed = sum(r.fails(strict) for r in results)
    warned = sum(not r.passed and not r.fails(strict) for r in results)
    passed = len(results) - failed - warned
    counts = f"{passed} passed, {failed} failed" + (
        f", {warned} warnings (our stricter rules; --strict fails them)" if warned else ""
    )
    verdict = "keeps Body Protocol v1" if not failed else "does NOT keep Body Protocol v1"
    return f"{counts}: {url} {verdict}"
