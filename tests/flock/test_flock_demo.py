"""`soulstack flock --demo` (issue 47 item 1): the scripted brain (soulstack.flock.demo) inside the
flock, as a real process on loopback: it says at start and in /api/ui that it is a demo, the Sentry
triages, crows answer with canned words and a list finishes; each call is paced (the model's sleep
seam records the waits). The page's side (it says so at open) is in test_flock_page_browser.py."""

import asyncio
import os
import subprocess
import sys

import aiohttp

from soulstack.flock.demo.brain import SCRIPTED
from soulstack.flock.demo.model import DemoModel
from soulstack.flock.lists.flow import FlockConfig
from tests.helpers import free_port
from tests.flock.helpers import SSE, Flock
from tests.flock.test_flock_offline import wait_for_line
from tests.helpers import ROOT


def flock_command(*flags, env=None):
    environment = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_BASE_URL")}
    return subprocess.Popen(
        [sys.executable, "-m", "soulstack.cli", "flock", *flags],
        cwd=ROOT,
        env={**environment, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


async def test_flock_demo_works_a_list_with_no_model_and_says_it_is_a_demo(tmp_path):
    port = free_port()
    # A key in the environment does not win over --demo: no model is asked (nothing listens there).
    flock = flock_command(
        "--demo", "--demo-pace", "0", "--port", str(port), "--data", str(tmp_path),
        env={"ANTHROPIC_API_KEY": "x", "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{free_port()}"},
    )  # fmt: skip
    try:
        line = await wait_for_line(flock, "flock: http://")
        assert "model demo (scripted: no model thinks, the answers are canned" in line, line
        async with aiohttp.ClientSession(f"http://127.0.0.1:{port}") as session:
            for _ in range(100):  # the server is up a moment after its first line
                try:
                    async with session.get("/api/ui") as response:
                        ui = await response.json()
                        break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.1)
            assert ui["mind"] == {"kind": "demo", "pace_s": 0}
            async with session.post("/api/lists", json={"text": "buy bread, milk and eggs", "requester": "you"}) as r:
                assert r.status == 202
                list_id = (await r.json())["list_id"]
            async with SSE(session, list_id) as stream:
                triaged = await stream.until("item.triaged", timeout=20)
                assert (triaged["mode"], triaged["subtasks"]) == ("split", ["buy bread", "buy milk", "buy eggs"])
                verdict = {"item_id": f"{list_id}-1", "target": "triage", "approve": True}
                async with session.post("/api/verdicts", json=verdict) as r:
                    assert r.status == 204
                answered = await stream.until("item.answered", timeout=20)
                assert answered["answer"].startswith("All of **buy bread") and SCRIPTED in answered["answer"]
                async with session.post("/api/verdicts", json={**verdict, "target": "output"}) as r:
                    assert r.status == 204
                finished = await stream.until("list.finished", timeout=20)
                assert finished["tokens_used"] > 0  # the demo counts what it reads and writes
    finally:
        flock.terminate()
        flock.wait(10)


def test_flock_demo_refuses_a_model_beside_it(tmp_path):
    flock = flock_command("--demo", "--provider", "anthropic", "--data", str(tmp_path), "--port", str(free_port()))
    out, _ = flock.communicate(timeout=60)
    assert flock.returncode == 2 and "--demo runs the scripted brain, no model" in out, out


async def test_each_demo_call_takes_about_its_pace(tmp_path):
    waits = []

    async def sleep(seconds):  # the model's sleep seam: the waits are read, not timed
        waits.append(seconds)

    model = DemoModel(pace_s=2.0, sleep=sleep)
    flock = await Flock(tmp_path, model=model, config=FlockConfig(heartbeat_s=1.0)).start()
    try:
        list_id = await flock.new_list("water the plants")
        async with flock.events(list_id) as stream:
            await stream.until("item.triaged")
            assert await flock.verdict(f"{list_id}-1", "triage") == 204
            await stream.until("item.answered")
        assert len(waits) >= 2 and all(1.5 <= wait <= 2.5 for wait in waits), waits  # the Sentry's and the crow's
    finally:
        await flock.stop()
