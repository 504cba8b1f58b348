"""tools/bench-jev as a user runs it, with --llm-base-url pointing at the protocol-true OpenAI fake
(top_logprobs, the real openai SDK), which answers from a table this test writes: the data's true
kinds at 0.9, every fifth message wrong, and the first request refused. Its figures measure the
wiring, never a model; what is checked is that the LLM line stands on its own above the last line,
says how many messages the local Jev answered when the server failed, and that the last line keeps
its spelling (issue 45: it is how progress is read)."""

import asyncio
import math
import re
import sys
from pathlib import Path

from soulstack.fakes.openai_api import FakeOpenAI, completion, error
from soulstack.flock.jev.local import load_separate
from tests.flock.test_jev_judge_fit import truth_table

BENCH = Path(__file__).resolve().parents[2] / "tools" / "bench_jev.py"
LAST_LINE = re.compile(
    r"^jev_accuracy=\d\.\d{3} jev_ece=\d\.\d{3} tag_p99_ms=\d+\.\d{2} separate_accuracy_sure=\d\.\d{3} "
    r"separate_coverage=\d\.\d{3} separate_overall=\d\.\d{3} separate_ece=\d\.\d{3}$"
)


def answering(table):
    def answer(body):
        asked = body["messages"][0]["content"]
        said = re.search(r"\nMessage: (.*)\n\nAnswer with the one letter only\.$", asked, re.S)[1]
        letter = table.get(said, "A")
        other = "A" if letter != "A" else "B"
        return completion(letter, top_logprobs=[(letter, math.log(0.9)), (other, math.log(0.1))])

    return answer


async def test_bench_jev_measures_a_logprobs_server_on_a_line_of_its_own_and_keeps_its_last_line():
    async with FakeOpenAI(default=answering(truth_table())) as fake:
        fake.reply(error(400))
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
    assert asked == separate
    assert lines[-2].startswith(
        f"the LLM backend (fake-model at {fake.base_url}/v1, logprobs; 1 of {separate} answered by the local Jev "
        "when the server failed) on the separate set: band 0.60: accuracy where sure "
    )
    # Four answers in five right at 0.9: where sure, right about four times in five.
    right, sure = map(int, re.search(r"accuracy where sure \d\.\d{3} \((\d+)/(\d+)\)", lines[-2]).groups())
    assert sure >= separate - 1 and 0.7 < right / sure < 0.9
    assert LAST_LINE.match(lines[-1]), lines[-1]
