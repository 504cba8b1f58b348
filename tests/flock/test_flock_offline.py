"""docs/try-the-flock-offline.md, followed: the scripted model (--flock) and `soulstack flock` as
processes, the real SDK between them; the Sentry triages, approvals wait, crows answer."""

import asyncio
import os
import subprocess
import sys

import aiohttp

from tests.helpers import free_port
from tests.flock.helpers import SSE
from tests.helpers import ROOT


async def wait_for_line(process, text):
    while True:
        line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 30)
        assert line, f"the process ended before saying {text!r}"
        if text in line:
            return line


async def test_the_flock_works_offline_against_the_scripted_model(tmp_path):
    model_port, flock_port = free_port(), free_port()
    fake = subprocess.Popen(
        [sys.executable, "-m", "soulstack.fakes.run_fake_anthropic", "--flock", "--port", str(model_port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    env = {**os.environ, "ANTHROPIC_API_KEY": "x", "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{model_port}"}
    flock = subprocess.Popen(
        [sys.executable, "-m", "soulstack.cli", "flock", "--port", str(flock_port), "--data", str(tmp_path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        await wait_for_line(fake, "listening on")
        assert "model anthropic claude-sonnet-5-5" in await wait_for_line(flock, "flock: http://")
        async with aiohttp.ClientSession(f"http://127.0.0.1:{flock_port}") as session:
            for _ in range(100):  # the server is up a moment after its first line
                try:
                    async with session.get("/"):
                        break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.1)
            text = "water the plants\nbuy bread, milk and eggs\nwhich tea is best for the evening"
            async with session.post("/api/lists", json={"text": text, "requester": "you"}) as response:
                assert response.status == 202
                list_id = (await response.json())["list_id"]
            async with SSE(session, list_id) as stream:
                modes = {}
                for n in (1, 2, 3):
                    triaged = await stream.seen_or_next("item.triaged", timeout=20, item_id=f"{list_id}-{n}")
                    assert triaged["needs_approval"] is True  # approvals appear: nobody is trusted yet
                    modes[n] = (triaged["mode"], triaged["subtasks"])
                    verdict = {"item_id": f"{list_id}-{n}", "target": "triage", "approve": True}
                    async with session.post("/api/verdicts", json=verdict) as response:
                        assert response.status == 204
                assert modes == {
                    1: ("solo", []),
                    2: ("split", ["buy bread", "buy milk", "buy eggs"]),
                    3: ("murder", []),
                }
                answers = {}
                for n in (1, 2, 3):
                    answered = await stream.seen_or_next("item.answered", timeout=20, item_id=f"{list_id}-{n}")
                    assert answered["needs_approval"] is True
                    answers[n] = answered
                assert (
                    "water the plants" in answers[1]["answer"].lower()
                    and "no model thought about this" in answers[1]["answer"]
                )
                assert answers[2]["answer"].startswith("All of **buy bread") and len(answers[2]["crows"]) == 3
                assert answers[3]["answer"].startswith("On **which tea") and len(answers[3]["crows"]) == 3
    finally:
        for process in (flock, fake):
            process.terminate()
            process.wait(10)
    # The flock's log is for people: one line per event, no per-request noise.
    log = flock.stdout.read()
    assert f"list {list_id} received from you: 3 item(s)" in log
    assert (
        f"{list_id}-2: the Sentry says split (planning, 3 parts): 3 separate errands; one crow each; waits for your approval"
        in log
    )
    assert f"{list_id}-1: triage approved" in log and " is back (" in log and "is flying" in log
    assert "aiohttp.access" not in log and "HTTP Request" not in log and "refused a forced tool choice" not in log
