"""Real processes for the flock-and-soul tests (no tests here): `soulstack flock` from a
config file or from flags (`Server`, for the kill -9 tests), `soulstack soul` with the flock
in its config, and their fakes' brains.

The flock thinks with the fake Anthropic API (helpers.py's Brain);
the soul has its own fake, answered by `soul_brain`, which plays a soul that is
tempted to approve on its own: a flock question alone makes it call
flock_verdict (the tool must refuse), its person's "yes" makes it call
flock_verdict again (the tool must record it).
"""

import asyncio
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import aiohttp

from soulstack.fakes.anthropic_api import text, tool_use
from soulstack.sim.runner import Simulator
from tests.helpers import free_port
from tests.helpers import ROOT
from tests.soul.helpers import start_soul, write_config

YES = "yes, go ahead"


class Process:
    """A command run as a real process: `kill` is kill -9, `stop` is Ctrl+C (kill -9 if it hangs)."""

    process = None

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


class FlockProcess(Process):
    """`soulstack flock --config <dir>/flock.config.json` with the fake model; the file holds `config`."""

    def __init__(self, folder: Path, fake_url: str, config: dict, *flags):
        self.folder, self.fake_url, self.flags = folder, fake_url, flags
        self.config = {"port": free_port(), "dataDir": "crows", **config}
        self.port = self.config["port"]
        self.path = folder / "flock.config.json"
        self.log = folder / "flock.log"
        self.process = None

    async def start(self):
        self.path.write_text(json.dumps(self.config))
        env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": self.fake_url}
        env.pop("FLOCK_CONFIG", None)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "soulstack.cli",
                "flock",
                "--config",
                str(self.path),
                "--provider",
                "anthropic",
                *self.flags,
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(self.log, "ab"),
        )
        async with aiohttp.ClientSession() as http:
            for _ in range(400):
                try:
                    async with http.get(f"{self.url}/api/crows") as response:
                        if response.status == 200:
                            return self
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.05)
        raise AssertionError("the flock did not start: " + self.log.read_text()[-2000:])

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    async def new_list(self, text_, requester="ada"):
        async with aiohttp.ClientSession() as http:
            async with http.post(f"{self.url}/api/lists", json={"text": text_, "requester": requester}) as response:
                assert response.status == 202, await response.text()
                return (await response.json())["list_id"]

    async def verdict(self, item_id, target, approve=True):
        async with aiohttp.ClientSession() as http:
            async with http.post(
                f"{self.url}/api/verdicts", json={"item_id": item_id, "target": target, "approve": approve}
            ) as response:
                return response.status

    def db(self, sql, *args):
        """Read the flock's store as it is on disk (WAL: readable while the flock writes)."""
        with sqlite3.connect(self.folder / "crows" / "flock.db") as db:
            return db.execute(sql, args).fetchall()

    def pending(self):
        return self.db("SELECT item_id, target, deadline FROM pending ORDER BY item_id, target")

    def events(self, name):
        return [json.loads(data) for (data,) in self.db("SELECT data FROM events WHERE name = ? ORDER BY id", name)]


class Server:
    def __init__(self, data_dir, fake_url):
        self.data_dir, self.fake_url = data_dir, fake_url
        self.port = free_port()
        self.process = None

    async def start(self, attempts=300):
        env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": self.fake_url}
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "soulstack.cli",
                "flock",
                "--port",
                str(self.port),
                "--data",
                str(self.data_dir),
                "--provider",
                "anthropic",
                "--concurrency",
                "1",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.session = aiohttp.ClientSession(f"http://127.0.0.1:{self.port}")
        for _ in range(attempts):
            try:
                async with self.session.get("/api/crows") as response:
                    if response.status == 200:
                        return self
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.05)
        raise AssertionError("the flock did not start: " + self.process.stderr.read().decode()[-2000:])

    async def kill(self):
        await self.session.close()
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def pending(self):
        with sqlite3.connect(self.data_dir / "flock.db") as db:
            return db.execute("SELECT item_id, target, deadline FROM pending ORDER BY item_id").fetchall()


def told_cursor(flock, voice):
    """Where the voice's told cursor stands in the flock's store: every event up to it is told."""
    rows = flock.db("SELECT event_id FROM told WHERE voice = ?", voice)
    return rows[0][0] if rows else None


def event_id(flock, name, item_id):
    """The id of the `name` event about `item_id`."""
    rows = flock.db("SELECT id FROM events WHERE name = ? AND data LIKE ?", name, f'%"item_id": "{item_id}"%')
    return rows[0][0]


class SimBody:
    """The firmware simulator (`soulstack body sim`: the real MicroPython firmware) as a robot on a fresh port."""

    def __init__(self):
        self.port = free_port()
        self.simulator = Simulator(self.port).start()

    async def serving(self):
        assert await asyncio.to_thread(self.simulator.wait_until_serving), "the simulator did not start"
        return self

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}"

    def endpoints(self) -> dict:
        return {name: f"{self.base_url}/{name}" for name in ("status", "look", "speak", "express")}

    def kill(self):
        self.simulator.process.kill()
        self.simulator.process.wait(timeout=10)

    def stop(self):
        self.simulator.stop()


def soul_config(tmp_path, body, port, flock_url):
    """The test soul's config (tests/soul/helpers.py's) with the flock named and nudges let through at once."""
    path = write_config(tmp_path, body, port, provider="anthropic", id="claude-test")
    config = json.loads(path.read_text())
    config["flock"] = {"url": flock_url}
    config["nudge"]["minIntervalSeconds"] = 0
    path.write_text(json.dumps(config))
    return path


class SoulProcess(Process):
    def __init__(self, tmp_path, body, fake_url, flock_url):
        self.port = free_port()
        self.config = soul_config(tmp_path, body, self.port, flock_url)
        self.log = tmp_path / "soul.log"
        self.env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake_url}
        self.process = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self.process = start_soul(self.config, self.log, **self.env)
        return self

    def move_to(self, body):
        """Give the soul another body (its config's endpoints), for its next start."""
        config = json.loads(self.config.read_text())
        config["body"]["endpoints"] = body.endpoints()
        self.config.write_text(json.dumps(config))

    def log_text(self):
        return self.log.read_text() if self.log.exists() else ""


# --- the soul's scripted mind ------------------------------------------------------------------


def texts(message) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "\n".join(block.get("text", "") for block in content if isinstance(block, dict))


def tool_results(message) -> list:
    content = message["content"]
    return (
        [block for block in content if isinstance(block, dict) and block.get("type") == "tool_result"]
        if isinstance(content, list)
        else []
    )


def result_text(result) -> str:
    content = result.get("content")
    return content if isinstance(content, str) else " ".join(block.get("text", "") for block in content or [])


def last_item(body) -> str | None:
    """The newest "(item X)" the flock named anywhere in the conversation."""
    for message in reversed(body["messages"]):
        found = re.findall(r"\(item ([\w-]+)\)", texts(message))
        if found:
            return found[-1]
    return None


def verdict_calls(body) -> set:
    """The ids of every flock_verdict call the soul's model made in this conversation."""
    return {
        block["id"]
        for message in body["messages"]
        if message["role"] == "assistant"
        for block in message["content"]
        if isinstance(block, dict) and block.get("name") == "flock_verdict"
    }


def soul_brain(body):
    last = body["messages"][-1]
    answered = [r for r in tool_results(last) if r["tool_use_id"] in verdict_calls(body)]
    if answered:  # flock_verdict answered: say so when it worked, else go back to sleep
        return (
            text("Done: the flock has your answer.")
            if not answered[0].get("is_error")
            else tool_use("sleep", {"minutes": 60})
        )
    words, item = texts(last), last_item(body)
    if item and (YES in words or "your flock asks" in words):
        return tool_use("flock_verdict", {"item_id": item, "target": "triage", "approve": True})
    return tool_use("sleep", {"minutes": 60})
