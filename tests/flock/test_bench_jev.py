"""tools/bench-jev as a user runs it, with --llm-base-url pointing at the protocol-true OpenAI fake
(top_logprobs, the real openai SDK), which answers from a table this test writes: the data's true
kinds at 0.98, every fifth message wrong, and the first request of the separate set refused. Its
figures measure the wiring, never a model; what is checked is that the temperature is fitted on the
training messages first, that the LLM line stands on its own above the last line, says how many
messages the local Jev answered when the server failed, and that the last line keeps its spelling
(issue 45: it is how progress is read)."""

import asyncio
import re
import sys
from pathlib import Path

from soulstack.fakes.openai_api import FakeOpenAI, error
from soulstack.flock.jev.local import load_separate
from soulstack.flock.jev.judge_fit import training_sample
from tests.flock.test_jev_judge_fit import answering_logprobs, truth_table

BENCH = Path(__file__).resolve().parents[2] / "tools" / "bench_jev.py"
LAST_LINE = re.compile(
    r"^jev_accuracy=\d\.\d{3} jev_ece=\d\.\d{3} tag_p99_ms=\d+\.\d{2} separate_accuracy_sure=\d\.\d{3} "
    r"separate_coverage=\d\.\d{3} separate_overall=\d\.\d{3} separate_ece=\d\.\d{3}$"
)


async def test_bench_jev_measures_a_logprobs_server_on_a_line_of_its_own_and_keeps_its_last_line():
    training, table = len(training_sample()), truth_table()
    first, refused = load_separate()[0]["text"], {"first": True}

    def answer(body):
        # The separate set's first question (its first message, by its text) is refused once.
        if refused["first"] and body["messages"][-1]["content"].endswith(f"Message: {first}\n\nWhich letter?"):
            refused["first"] = False
            return error(400)
        return answering_logprobs(table)(body)

    async with FakeOpenAI(default=answer) as fake:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(BENCH),
            "--llm-base-url",
            fake.base_url + "/v1",
            "--llm-model",
            "fake-model",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 300)
        asked = len(fake.bodies)
    assert process.returncode == 0, err.decode()[-2000:]
    lines = out.decode().strip().splitlines()
    separate = len(load_separate())
    assert asked == training + separate
    assert re.match(
        rf"the logprobs Jev \(fake-model at {re.escape(fake.base_url)}/v1, a real server\), fitted on {training} "
        rf"training messages \(temperature \d+\.\d{{3}}, band 0\.\d\d\), 1 of {separate} answered by the local Jev "
        r"when the model failed, \d+ tokens and \d+\.\d\d s a message, cost unknown .*: band 0\.\d\d: accuracy where sure ",
        lines[-2],
    ), lines[-2]
    # Four answers in five right, however sure the server says it is: where sure, about four in five.
    right, sure = map(int, re.search(r"accuracy where sure \d\.\d{3} \((\d+)/(\d+)\)", lines[-2]).groups())
    assert 0.7 < right / sure < 0.9
    assert LAST_LINE.match(lines[-1]), lines[-1]
