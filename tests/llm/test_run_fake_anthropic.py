"""host/fakes/run_fake_anthropic.py as its own process, called by the real anthropic SDK."""

import asyncio
import json
import subprocess
import sys

import anthropic

from tests.helpers import free_port
from tests.helpers import ROOT


async def start_fake(tmp_path, script, *extra):
    (tmp_path / "replies.json").write_text(json.dumps(script))
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "soulstack.fakes.run_fake_anthropic",
            "--port",
            str(port),
            "--script",
            str(tmp_path / "replies.json"),
            "--record",
            str(tmp_path / "requests.jsonl"),
            *extra,
        ],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = await asyncio.to_thread(process.stderr.readline)  # "listening on ..." once it is up
    assert f"listening on http://127.0.0.1:{port}" in line, line
    return process, f"http://127.0.0.1:{port}"


async def test_scripted_replies_in_order_then_default_and_requests_recorded(tmp_path):
    script = [{"tool": "look", "input": {"question": "who?"}, "text": "Let me see."}, "Hello there.", {"error": 529}]
    process, url = await start_fake(tmp_path, script, "--default", '{"tool": "sleep", "input": {"minutes": 5}}')
    try:
        client = anthropic.AsyncAnthropic(api_key="k", base_url=url, max_retries=0)
        ask = dict(model="claude-test", max_tokens=100, messages=[{"role": "user", "content": "hi"}])
        first = await client.messages.create(**ask)
        assert [b.type for b in first.content] == ["text", "tool_use"]
        assert first.content[1].name == "look" and first.content[1].input == {"question": "who?"}
        second = await client.messages.create(**ask)
        assert second.content[0].text == "Hello there."
        try:
            await client.messages.create(**ask)
            raise AssertionError("the scripted 529 did not arrive")
        except anthropic.APIStatusError as error:
            assert error.status_code == 529
        fourth, fifth = await client.messages.create(**ask), await client.messages.create(**ask)
        assert fourth.content[0].name == fifth.content[0].name == "sleep"
        assert fourth.content[0].id != fifth.content[0].id  # each default call gets its own tool_use id
        await client.close()
    finally:
        process.terminate()
        process.wait(timeout=10)
    recorded = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert len(recorded) == 5 and recorded[0]["messages"] == [{"role": "user", "content": "hi"}]
    assert (tmp_path / "requests.jsonl").stat().st_mode & 0o777 == 0o600  # the soul's prompts hold a person's words


async def test_image_data_is_shortened_in_the_record(tmp_path):
    process, url = await start_fake(tmp_path, ["I see it."])
    try:
        client = anthropic.AsyncAnthropic(api_key="k", base_url=url, max_retries=0)
        image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD" * 10}}
        await client.messages.create(
            model="claude-test",
            max_tokens=100,
            messages=[{"role": "user", "content": [image, {"type": "text", "text": "what?"}]}],
        )
        await client.close()
    finally:
        process.terminate()
        process.wait(timeout=10)
    recorded = json.loads((tmp_path / "requests.jsonl").read_text())
    assert recorded["messages"][0]["content"][0]["source"]["data"] == "<40 base64 chars>"


def test_a_script_that_is_not_a_list_is_one_line(tmp_path):
    (tmp_path / "replies.json").write_text('{"tool": "look"}')
    done = subprocess.run(
        [sys.executable, "-m", "soulstack.fakes.run_fake_anthropic", "--script", str(tmp_path / "replies.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode != 0
    assert done.stderr.strip().endswith("must be a JSON list of replies") and "Traceback" not in done.stderr


async def test_overlapping_flock_calls_are_each_logged_and_recorded_as_themselves(tmp_path):
    """With --pace the calls overlap: each log line and record line is its own call's, not the latest's."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "soulstack.fakes.run_fake_anthropic", "--flock", "--pace", "0.4", "--port", str(port)]
        + ["--record", str(tmp_path / "requests.jsonl")],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        started = await asyncio.to_thread(process.stderr.readline)
        assert f"listening on http://127.0.0.1:{port}" in started and "scripted" not in started, started
        client = anthropic.AsyncAnthropic(api_key="k", base_url=f"http://127.0.0.1:{port}", max_retries=0)

        def ask(turns):  # 1, 3 or 5 messages, so each log line shows whose it is
            words = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"say {i}"} for i in range(turns)]
            return client.messages.create(
                model="claude-test", max_tokens=100, system="You are Ash, a crow.", messages=words
            )

        replies = await asyncio.gather(ask(1), ask(3), ask(5))
        assert all(reply.content[0].type == "text" for reply in replies)
        await client.close()
    finally:
        process.terminate()
        _, rest = process.communicate(timeout=10)
    lines = [line for line in rest.splitlines() if ": request " in line]
    assert len(lines) == 3, rest
    assert sorted(line.split(": request ")[1].split(":")[0] for line in lines) == ["1", "2", "3"]
    assert sorted(int(line.split(": ")[2].split()[0]) for line in lines) == [1, 3, 5]
    assert all("answered by the flock brain" in line and "scripted" not in line for line in lines), lines
    recorded = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert sorted(len(body["messages"]) for body in recorded) == [1, 3, 5]
    for line in lines:  # request N in the log is line N of the record
        number, messages = line.split(": request ")[1].split(": ")[0:2]
        assert len(recorded[int(number) - 1]["messages"]) == int(messages.split()[0])
