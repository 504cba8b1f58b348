"""tools/bench-voice runs end to end, in this process (its figures are for people to read; only
what it prints is checked: every shape, the answer each was heard to give, and the last line)."""

import importlib.util
import re

from tests.helpers import ROOT

SPEC = importlib.util.spec_from_file_location("bench_voice", ROOT / "tools" / "bench_voice.py")
bench_voice = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench_voice)


async def test_bench_voice_prints_every_shape_and_its_last_line():
    args = bench_voice.parse(["--runs", "1", "--ttft-ms", "20", "--tps", "2000"])
    lines = bench_voice.report(await bench_voice.run(args), args)
    assert re.fullmatch(r"first_words_overhead_ms_p50=\d+\.\d first_words_overhead_ms_p95=\d+\.\d", lines[-1])
    printed = "\n".join(lines)
    for shape, answer in [
        ("sentence, then tools", "'Hello, Ana! Good to see you. I was about to nap.'"),
        ("monologue, then a sentence", "'Welcome back, Ana. How was your day?'"),
        ("look first, then a sentence", '"Oh, it\'s you, Ana! You look tired. Sit down."'),
        ("a speak call", "\"Hi Ana, I'm right here. What's up?\""),
        (
            "Chinese",
            "'\u4f60\u56de\u6765\u5566\uff01\u4eca\u5929\u8fc7\u5f97\u600e\u4e48\u6837\uff1f\u6211\u4e00\u76f4\u5728\u7b49\u4f60\u3002'",
        ),
    ]:
        assert re.search(rf"^{re.escape(shape)} +\d", printed, re.M), (shape, printed)  # its row of figures
        assert re.search(rf"^  {re.escape(shape)} +{re.escape(answer)}$", printed, re.M), (shape, printed)
