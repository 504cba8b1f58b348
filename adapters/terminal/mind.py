"""Whose mind the terminal body serves: the soul's GET /health, read every few seconds.

The soul's one HTTP server answers /nudge and /health, so the body finds
/health next to the nudge URL it already has. `mind_line` turns the answer
into the status line the face screen keeps showing: the model and provider,
"brainstem — no model key", "the model's calls fail, retrying: <why>" while the
soul's calls fail (unreachable, refused, a wrong key: the soul's alarm says
which), or that the soul itself is not answering. `state_line` is the line
under it: whether the soul is thinking, or asleep and until when.
"""

import asyncio
from datetime import datetime
from urllib.parse import urlsplit, urlunsplit

import aiohttp

POLL_S = 2.0
NO_KEY = "brainstem — no model key (export ANTHROPIC_API_KEY=... or OPENAI_BASE_URL=..., then restart)"


def health_url(nudge_url: str) -> str:
    parts = urlsplit(nudge_url)
    return urlunsplit((parts.scheme, parts.netloc, "/health", "", ""))


def mind_line(health: dict) -> str:
    """The status line for one /health answer."""
    provider = health.get("provider") or {}
    name, model = provider.get("name", "brainstem"), provider.get("model") or ""
    if name == "brainstem":
        return NO_KEY
    mind = f"{model} ({name})" if model else name
    failing = next((a for a in health.get("alarms") or [] if a.get("code") == "provider_failing"), None)
    if failing is None:
        return mind
    why = failing.get("message", "")
    if provider.get("fellBackToBrainstem"):
        return f"{mind} — the model's calls fail ({why}); the brainstem stands in, retrying at the next waking"
    return f"{mind} — the model's calls fail, retrying: {why}"


def state_line(health: dict) -> str:
    """What the soul is doing, from one /health answer: thinking, or asleep until its alarm."""
    state = health.get("state")
    if state == "thinking":
        return "thinking..."
    if state == "asleep":
        until = health.get("asleepUntil")
        try:
            at = datetime.fromisoformat(until).strftime("%H:%M") if until else None
        except ValueError:
            at = None
        return f"asleep until {at} (what you type wakes it sooner)" if at else "asleep"
    return "starting" if state == "starting" else ""


async def read_mind(session: aiohttp.ClientSession, url: str, token: str | None) -> tuple[str, str]:
    """(the status line, the state line) now, from one GET `url`; the soul being down is a line too."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        async with session.get(url, headers=headers, timeout=aiohttp.ClientTimeout(total=POLL_S)) as response:
            if response.status == 401:
                return "unknown: the soul refused /health (check --nudge-token)", ""
            if response.status != 200:
                return f"unknown: the soul's /health answered {response.status}", ""
            health = await response.json()
            return mind_line(health), state_line(health)
    except (TimeoutError, aiohttp.ClientError, ValueError):
        return f"the soul is not answering at {url.removesuffix('/health')} (starting, or stopped)", ""


async def watch_mind(nudge_url: str, token: str | None, show) -> None:
    """Call `show(mind, state)` whenever either line changes, until cancelled."""
    url, shown = health_url(nudge_url), None
    async with aiohttp.ClientSession() as session:
        while True:
            lines = await read_mind(session, url, token)
            if lines != shown:
                show(*lines)
                shown = lines
            await asyncio.sleep(POLL_S)
