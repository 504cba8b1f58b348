"""Jev's benchmark (run it as tools/bench-jev): the local Jev's quality in distribution (the
held-out fifth of the training conversations), on the calibration set (another writer, never
trained on; it fits the temperature), on data/same_writer.nests (train.nests' writer; with the
calibration set it chooses the band) and on the separate set
(data/outside.nests, written by someone who never saw the training set, fitted on by nothing;
host/flock/jev/data/README.md), the latency of tagging one message, and the LLM backend on the
same separate set.

The LLM backend, fitted on training messages first, as `soulstack flock jev-report --judge` fits
it: with --llm-base-url URL (any OpenAI-compatible server that returns logprobs), the logprobs Jev,
its temperature fitted (about 500 calls), measured as the flock runs it (a message the server fails
on is the local Jev's, and the line says how many). Without it, the judge through the flock's own model: where the environment
holds a model key (ANTHROPIC_API_KEY, OPENAI_BASE_URL: the provider the flock would choose), fitted
on training messages and measured on the separate set for real, about 1,500 model calls, as
`soulstack flock jev-report --judge` does; with no key, the same fit and measurement against the
fake Messages API answering every sample the same way, which only shows the wiring works: its
figures measure nothing, and it says so.

Last line: jev_accuracy=<n> jev_ece=<n> tag_p99_ms=<n> separate_accuracy_sure=<n>
separate_coverage=<n> separate_overall=<n> separate_ece=<n> (jev_* in distribution).
Goals on the separate set (issue 45): accuracy where sure >= 0.90, coverage >= 0.60, overall >= 0.80,
ECE <= 0.05, no sure-and-wrong tag on a plain message (`!`); tagging p99 < 5 ms.
"""

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from soulstack.flock.jev import evaluate  # noqa: E402
from soulstack.flock.jev.dataset import context_of  # noqa: E402
from soulstack.flock.jev.llm import LlmJev  # noqa: E402
from soulstack.flock.jev.local import load_calibration, load_separate, local_jev  # noqa: E402
from soulstack.flock.jev.report import format_measured, measured  # noqa: E402


def latency(jev, examples) -> tuple:
    """-> (p50 ms, p99 ms, CPU p50 ms, CPU p99 ms) of tagging one message at a time, five times each."""
    wall, cpu = [], []
    for _ in range(5):
        for e in examples:
            start, start_cpu = time.perf_counter(), time.process_time()
            jev.kind_probs(e["text"], **context_of(e))
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
    wall.sort()
    cpu.sort()
    p50, p99 = len(wall) // 2, int(len(wall) * 0.99)
    return wall[p50] * 1000, wall[p99] * 1000, cpu[p50] * 1000, cpu[p99] * 1000


async def llm_figures(base_url: str | None, model: str) -> str:
    """One line: an LLM backend fitted on the training messages and measured on the separate set,
    as `soulstack flock jev-report --judge` does. With --llm-base-url, the logprobs Jev against that
    server; else the judge through the flock's own model where the environment holds a key; else
    the judge through the fake Messages API answering 'A' (say) to every sample: the fit and the
    measurement run, but the answers are no model's."""
    from soulstack.flock.commands import build_model
    from soulstack.flock.jev.judge_fit import Agreement, Logprobs, describe, fit_and_measure

    real = None if base_url else build_model(None, None)  # the provider the environment's key names
    with tempfile.TemporaryDirectory() as folder:
        if base_url:
            # As the flock runs it: a message the server fails on (a timeout, no logprobs) is the local Jev's.
            judged = await fit_and_measure(Logprobs(LlmJev(model, base_url, timeout_s=60.0)), folder, say=print)
            what = f"the logprobs Jev ({model} at {base_url}, a real server)"
        elif real is not None:
            judged = await fit_and_measure(Agreement(real), folder, say=print)
            what = f"the LLM judge ({real.provider} {real.model_id}, a real provider)"
        else:
            from soulstack.fakes.anthropic_api import FakeAnthropic, text
            from soulstack.llm.anthropic import AnthropicModel

            async with FakeAnthropic(default=lambda body: text("A")) as fake:
                claude = AnthropicModel("claude-fake", api_key="fake", base_url=fake.base_url)
                judged = await fit_and_measure(Agreement(claude), folder, say=lambda line: None)
            what = (
                "the LLM judge through the fake Messages API (a wiring test, not a measurement: no model key here, "
                "and the fake answers 'A' = say to every sample)"
            )
    fit, separate = judged["fit"], len(load_separate())
    return (
        f"{what}, fitted on {fit.messages} training messages ({describe(fit)}, band {fit.band:.2f}), "
        f"{judged['unanswered']} of {separate} answered by the local Jev when the model failed, {judged['cost']}: "
        + evaluate.format_figures(judged["separate"])
    )


def main() -> int:
    parser = argparse.ArgumentParser(prog="tools/bench-jev", description=__doc__.split("\n\n")[0])
    parser.add_argument("--llm-base-url", help="an OpenAI-compatible server with logprobs, to compare on the same set")
    parser.add_argument("--llm-model", default="default", help="its model id (default 'default')")
    args = parser.parse_args()
    started = time.perf_counter()
    jev = local_jev()
    print(f"trained in {time.perf_counter() - started:.1f} s (scikit-learn import included)")
    result = measured(jev)
    print(format_measured(result))
    p50, p99, cpu50, cpu99 = latency(jev, load_calibration())
    print(
        f"tagging one message: p50 {p50:.2f} ms, p99 {p99:.2f} ms "
        f"(CPU time p50 {cpu50:.2f} ms, p99 {cpu99:.2f} ms: on a busy machine the wall figures include waiting for a core)"
    )
    print(asyncio.run(llm_figures(args.llm_base_url, args.llm_model)))
    held, separate = result["held"], result["separate"]
    print(
        f"jev_accuracy={held['accuracy']:.3f} jev_ece={held['ece']:.3f} tag_p99_ms={p99:.2f} "
        f"separate_accuracy_sure={separate['accuracy_sure']:.3f} separate_coverage={separate['coverage']:.3f} "
        f"separate_overall={separate['overall']:.3f} separate_ece={separate['ece']:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
