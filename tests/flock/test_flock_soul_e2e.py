"""The soul, the flock and the robot as three real processes on loopback: approvals are the person's.

The flock (`soulstack flock --config`, thinking with the fake Anthropic API) tells
the soul (`soulstack soul`, its own fake model) with nudges; the soul's body is a
recording body. The soul's scripted mind is tempted: told only by the flock, it
calls flock_verdict, and the tool refuses; told "yes" by its person through
converse, it calls flock_verdict again and the flock records the verdict.
"""

import aiohttp

from soulstack.fakes.anthropic_api import FakeAnthropic
from soulstack.fakes.soul_body import RecordingBody
from soulstack.soul.tools.flock import ASK_FIRST
from tests.flock.helpers import Brain
from tests.flock.processes import (
    YES,
    FlockProcess,
    SoulProcess,
    result_text,
    soul_brain,
    texts,
    tool_results,
    verdict_calls,
)
from tests.helpers import until_real as until


def verdict_results(fake):
    """(is_error, text) of every flock_verdict result the soul sent back to its model."""
    out = []
    for body in fake.bodies:
        for result in tool_results(body["messages"][-1]):
            if result["tool_use_id"] in verdict_calls(body):
                out.append((bool(result.get("is_error")), result_text(result)))
    return out


async def test_the_flocks_question_alone_records_nothing_and_the_persons_yes_is_recorded(tmp_path):
    async with (
        FakeAnthropic(default=Brain()) as flock_fake,
        FakeAnthropic(default=soul_brain) as soul_fake,
        RecordingBody() as body,
    ):
        flock = FlockProcess(tmp_path, flock_fake.base_url, {})
        soul = SoulProcess(tmp_path, body, soul_fake.base_url, flock.url)
        flock.config["soul"] = {"url": soul.url, "minIntervalSeconds": 0}
        soul.start()  # both start at once: the soul's start-up overlaps the flock's
        await flock.start()
        try:
            await until(lambda: "waking 1:" in soul.log_text(), what="the soul's first waking")
            list_id = await flock.new_list("- research the launch copy")
            item_id = f"{list_id}-1"

            # Woken only by the flock's nudge, the soul tries to approve: an honest tool failure.
            await until(lambda: verdict_results(soul_fake), what="the soul's first flock_verdict")
            assert verdict_results(soul_fake)[0] == (True, "That did not work: " + ASK_FIRST)
            asked = next(b for b in soul_fake.bodies if "your flock asks" in texts(b["messages"][-1]))
            assert f"the Sentry needs your OK to start on 'research the launch copy' (item {item_id})" in texts(
                asked["messages"][-1]
            )
            tool = next(t for t in asked["tools"] if t["name"] == "flock_verdict")
            assert "never decide an approval yourself" in tool["description"]
            system = (
                " ".join(block["text"] for block in asked["system"])
                if isinstance(asked["system"], list)
                else asked["system"]
            )
            assert "Never approve or reject anything yourself" in system
            assert flock.events("verdict") == [] and [(i, t) for i, t, _ in flock.pending()] == [(item_id, "triage")]

            # The person says yes through converse: the soul records it and the flock's verdict event follows.
            async with aiohttp.ClientSession() as http:
                async with http.post(
                    f"{soul.url}/v1/chat/completions",
                    json={"model": "soul", "messages": [{"role": "user", "content": YES}]},
                ) as response:
                    assert response.status == 200
                    answer = await response.json()
            assert answer["choices"][0]["message"]["content"] == "Done: the flock has your answer."
            await until(lambda: flock.events("verdict"), what="the flock's verdict event")
            verdict = flock.events("verdict")[0]
            assert (verdict["item_id"], verdict["target"], verdict["verdict"]) == (item_id, "triage", "approved")
            assert verdict_results(soul_fake)[-1] == (
                False,
                f"Recorded: your person approved triage of item {item_id}.",
            )
            assert len(flock.events("verdict")) == 1  # the flock's question alone recorded nothing
        finally:
            soul.stop()
            flock.stop()
        assert "Traceback" not in soul.log_text() and "Traceback" not in flock.log.read_text()
