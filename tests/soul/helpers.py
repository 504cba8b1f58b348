"""Plain helpers for the soul's tests: a soul living in the test's process (`make_cfg`, `Running`),
one started as a real `soulstack soul` process (`write_config`, `start_soul`, `stop_with_ctrl_c`),
readers of what the fake Messages API was sent (`texts_of`, the prompt cache's `same_prefix`), and
the converse tests' `JumpClock`. Waiting for something: tests/helpers.py's `until`/`until_real`."""

import asyncio
import json
import os
import signal
import subprocess
import sys
from datetime import datetime, timedelta, UTC

import aiohttp

from soulstack.clocks import Clock
from soulstack.fakes.anthropic_api import cacheable_blocks, tool_use
from soulstack.llm.anthropic import AnthropicModel
from soulstack.soul import config
from soulstack.soul.run import build_soul, serve_and_live
from tests.helpers import ROOT, until

AFTERNOON = datetime(2024, 5, 1, 14, 0, tzinfo=UTC)


# --- a soul in the test's process ---------------------------------------------------------


def make_cfg(tmp_path, body, port=0, hears_itself=False, **overrides):
    """`hears_itself`: the body's microphone hears its own speaker (`body.hearsItself`, a xiaozhi device
    in auto mode), so the echo guard judges what it hears."""
    raw = {
        "soulDir": str(tmp_path / "soul"),
        "timezone": "UTC",
        "body": {
            "name": "the test body",
            "endpoints": body.endpoints(),
            **({"hearsItself": True} if hears_itself else {}),
        },
        "persona": {"name": "Pip", "human": "Ana"},
        "nudge": {"port": port},
        "model": {"retries": 1, "keepWarm": False},  # these tests count requests; keep-warm: test_soul_keepwarm.py
    }
    for key, value in overrides.items():
        raw.setdefault(key, {}).update(value) if isinstance(value, dict) else raw.__setitem__(key, value)
    cfg, warnings = config.from_dict(raw)
    assert warnings == []
    return cfg


class Running:
    """A soul living in the background of a test, with its HTTP server up."""

    def __init__(self, soul):
        self.soul = soul
        self.lines = []
        self.task = None

    async def __aenter__(self):
        self.task = asyncio.create_task(serve_and_live(self.soul, announce=self.lines.append))
        for _ in range(200):
            if self.lines:
                break
            await asyncio.sleep(0.01)
        self.url = self.lines[0].split()[2]
        return self

    async def __aexit__(self, *exc):
        self.task.cancel()
        try:
            await self.task
        except asyncio.CancelledError:
            pass

    async def post(self, path, payload=None, headers=None, raw=None):
        async with aiohttp.ClientSession() as http:
            kwargs = {"data": raw} if raw is not None else {"json": payload}
            async with http.post(self.url + path, headers=headers, **kwargs) as response:
                return response.status, await response.json(content_type=None)


def anthropic_model(fake):
    return AnthropicModel("claude-test", api_key="test-key", base_url=fake.base_url)


def texts_of(message) -> str:
    """All text in one API message, tool results included."""
    out = []
    for block in (
        message["content"] if isinstance(message["content"], list) else [{"type": "text", "text": message["content"]}]
    ):
        if block["type"] == "text":
            out.append(block["text"])
        elif block["type"] == "tool_result":
            content = block.get("content")
            if isinstance(content, str):
                out.append(content)
            else:
                out += [b["text"] for b in content or [] if b["type"] == "text"]
    return "\n".join(out)


def sleep_forever(body):
    return tool_use("sleep", {"minutes": 60})


# --- a soul as a real process -------------------------------------------------------------


KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "SOUL_CONFIG")


def write_config(tmp_path, body, port, **model):
    path = tmp_path / "soul.config.json"
    path.write_text(
        json.dumps(
            {
                "soulDir": "soul",
                "timezone": "UTC",
                "model": {"retries": 0, **model},
                "body": {"name": "the test body", "endpoints": body.endpoints()},
                "persona": {"name": "Pip", "human": "Ana"},
                "log": {"streamThoughts": True},
                "nudge": {"port": port},
                # These souls live on the wall clock: no night hours, so what they do does not depend on
                # when the tests run (at night the brainstem shows a sleepy face, not a glad one).
                "loop": {"nightStartHour": 0, "nightEndHour": 0},
            }
        )
    )
    return path


def start_soul(config_path, log_path, *flags, **env):
    clean = {k: v for k, v in os.environ.items() if k not in KEYS}
    clean.update(env)
    return subprocess.Popen(
        [sys.executable, "-m", "soulstack.cli", "soul", "--config", str(config_path), *flags],
        cwd=ROOT,
        env=clean,
        stdout=subprocess.DEVNULL,
        stderr=open(log_path, "ab"),
    )


async def stop_with_ctrl_c(process) -> int:
    process.send_signal(signal.SIGINT)
    for _ in range(500):
        if process.poll() is not None:
            return process.returncode
        await asyncio.sleep(0.02)
    process.kill()
    raise AssertionError("the soul did not stop on Ctrl+C")


# --- a soul with a model from config + environment, and the prompt cache it is sent -------


def anthropic_env(fake):
    """The soul builds its own model from config + environment, as `soulstack soul` does."""
    return {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.base_url}


def cfg_for(tmp_path, body, **overrides):
    overrides.setdefault("model", {})
    overrides["model"] = {"provider": "anthropic", "id": "claude-sonnet-5-5", "retries": 0, **overrides["model"]}
    return make_cfg(tmp_path, body, **overrides)


def last_breakpoint(body) -> int:
    return max(i for i, (_canon, _tokens, ttl) in enumerate(cacheable_blocks(body)) if ttl)


def same_prefix(earlier, later) -> bool:
    """`later` repeats `earlier` block for block (cache_control aside) up to earlier's last breakpoint."""
    end = last_breakpoint(earlier) + 1
    a = [canon for canon, _t, _ttl in cacheable_blocks(earlier)[:end]]
    b = [canon for canon, _t, _ttl in cacheable_blocks(later)[:end]]
    return a == b


def tokens_to_last_breakpoint(body) -> int:
    return sum(tokens for _c, tokens, _ttl in cacheable_blocks(body)[: last_breakpoint(body) + 1])


# --- the converse tests' clock and soul ------------------------------------------------------


class JumpClock(Clock):
    """Time stands still but for the test's jumps: `jump(45)` moves it on and ends every wait due by then.

    (It followed real time once, at 1x: under load a test's own steps took up to 0.4 s of the
    guard's 1 s of slack after `jump(44)`.) A soul's sleep ends by its wake event or a jump."""

    def __init__(self, start):
        self.start, self.offset = start, 0.0
        self._jumped = asyncio.Event()

    def monotonic(self) -> float:
        return self.offset

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.offset)

    async def sleep(self, seconds: float) -> None:
        await self.sleep_until_woken(seconds, asyncio.Event())

    async def sleep_until_woken(self, seconds: float, wake: asyncio.Event) -> bool:
        due = self.offset + max(0.0, seconds)
        while not wake.is_set() and self.offset < due:
            jumped, woken = (asyncio.ensure_future(e.wait()) for e in (self._jumped, wake))
            try:
                await asyncio.wait({jumped, woken}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                jumped.cancel()
                woken.cancel()
        return wake.is_set()

    def jump(self, seconds: float) -> None:
        self.offset += seconds
        self._jumped.set()
        self._jumped = asyncio.Event()


def sleep_long(body):
    return tool_use("sleep", {"minutes": 60})


def requests_hearing(fake, words) -> list:
    """Indexes of the model requests whose newest user message carries `words`."""
    return [i for i, body in enumerate(fake.bodies) if words in texts_of(body["messages"][-1])]


def a_soul(tmp_path, body, fake, clock=None, **overrides):
    return build_soul(
        make_cfg(tmp_path, body, **overrides), clock=clock or JumpClock(AFTERNOON), model=anthropic_model(fake)
    )


async def fell_asleep(soul, wakings=1):
    await until(lambda: soul.wakings == wakings and soul.state == "asleep", what=f"sleep after waking {wakings}")
