"""How soon a person hears the soul's first words (run it as tools/bench-voice).

A real soul (host/soul/run.py's build_soul, its own HTTP server on loopback)
is asked by the real openai SDK with `stream: true`, as a voice stack asks.
Its model is the real anthropic SDK talking to host/fakes/anthropic_api.py,
whose stream is paced like a real model's (`Pacer`): the first content comes
`--ttft-ms` after the request, then text at `--tps` tokens a second (four
characters a token). Its body is a real Body Protocol server on loopback.

For each reply shape the bench measures, at the client, the time from the
POST to the first content chunk, and the soul's overhead: that moment minus
the moment the fake finished writing the first spoken sentence (for a
`speak` call: the end of its input). Beside them, what the same run would
have cost a voice stack that waits for the whole model call carrying the
answer (the end of that call's stream) or for the whole turn (the soul's
`on_waking_end`) -- measured in the same runs, not simulated.

The fake, the soul and the client share one event loop, so the overhead
includes their contention; separate processes would see no more.
Last line: first_words_overhead_ms_p50=<n> first_words_overhead_ms_p95=<n>.
"""

import argparse
import asyncio
import itertools
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from openai import AsyncOpenAI  # noqa: E402

from soulstack.fakes.anthropic_api import FakeAnthropic, message, tool_use  # noqa: E402
from soulstack.fakes.scripted_server import steered  # noqa: E402
from soulstack.fakes.soul_body import RecordingBody  # noqa: E402
from tools.bench_soul import awake_soul  # noqa: E402

CHARS_PER_TOKEN = 4
SPEAK_ENDS = "<the speak call's input is complete>"
_ids = itertools.count(1)


def text(words):
    return {"type": "text", "text": words}


def call(name, **arguments):
    return {"type": "tool_use", "id": f"toolu_bench{next(_ids):05d}", "name": name, "input": arguments}


def sleep_call():
    return call("sleep", minutes=60)


# name -> (the model's replies for one answer, the first spoken sentence: a marker in the raw text, or SPEAK_ENDS)
SHAPES = {
    "sentence, then tools": (
        lambda: [
            message(
                text("Hello, Ana! Good to see you. I was about to nap."), call("express", emotion="happy"), sleep_call()
            )
        ],
        "Hello, Ana!",
    ),
    "monologue, then a sentence": (
        lambda: [
            message(
                text("(She is back. Say something warm (not too much).) Welcome back, Ana. How was your day?"),
                sleep_call(),
            )
        ],
        "Welcome back, Ana.",
    ),
    "look first, then a sentence": (
        lambda: [
            message(call("look", question="who is there?")),
            message(text("Oh, it's you, Ana! You look tired. Sit down."), sleep_call()),
        ],
        "Oh, it's you, Ana!",
    ),
    "a speak call": (
        lambda: [message(call("speak", text="Hi Ana, I'm right here. What's up?"), sleep_call())],
        SPEAK_ENDS,
    ),
    "Chinese": (
        lambda: [
            message(
                text(
                    "\uff08\u770b\u7740\u5979\uff09\u4f60\u56de\u6765\u5566\uff01\u4eca\u5929\u8fc7\u5f97\u600e\u4e48\u6837\uff1f"
                    "\u6211\u4e00\u76f4\u5728\u7b49\u4f60\u3002"
                ),
                sleep_call(),
            )
        ],
        "\u4f60\u56de\u6765\u5566\uff01",
    ),
}


class Pacer:
    """Paces one fake reply's stream like a model (first content after `ttft_s`, then `tps` tokens
    a second) and notes when the first spoken sentence (`marker`) and the whole reply were written."""

    def __init__(self, ttft_s, tps, marker=None):
        self.ttft_s, self.tps, self.marker = ttft_s, tps, marker
        self.texts, self.kinds = {}, {}
        self.started_at = self.spoken_at = self.ended_at = None

    async def __call__(self, data):
        event = json.loads(data)
        kind = event["type"]
        if kind == "message_start":
            self.started_at = time.perf_counter()
            await asyncio.sleep(self.ttft_s)
        elif kind == "content_block_start":
            block = event["content_block"]
            self.kinds[event["index"]] = block.get("name") or block["type"]
        elif kind == "content_block_delta":
            delta = event["delta"]
            piece = delta.get("text") or delta.get("partial_json") or delta.get("thinking") or ""
            if delta["type"] == "text_delta":
                self.texts[event["index"]] = self.texts.get(event["index"], "") + piece
                if self.marker and self.marker in self.texts[event["index"]]:
                    self._spoken()
            await asyncio.sleep(len(piece) / CHARS_PER_TOKEN / self.tps)
        elif kind == "content_block_stop" and self.marker == SPEAK_ENDS and self.kinds.get(event["index"]) == "speak":
            self._spoken()
        elif kind == "message_stop":
            self.ended_at = time.perf_counter()

    def _spoken(self):
        if self.spoken_at is None:
            self.spoken_at = time.perf_counter()


async def ask(client, words):
    """POST the words, streamed; (when it was sent, when the first content chunk came, the answer)."""
    first, pieces = None, []
    start = time.perf_counter()
    stream = await client.chat.completions.create(
        model="soul", messages=[{"role": "user", "content": words}], stream=True
    )
    async for chunk in stream:
        for choice in chunk.choices:
            if choice.delta.content:
                first = first or time.perf_counter()
                pieces.append(choice.delta.content)
    return start, first, "".join(pieces)


async def run(args) -> dict:
    rows = {name: [] for name in args.shape}
    turn_ends = []
    with tempfile.TemporaryDirectory() as soul_dir:
        async with (
            RecordingBody() as body,
            FakeAnthropic(default=lambda _body: tool_use("sleep", {"minutes": 60})) as fake,
            awake_soul(soul_dir, body, fake, [lambda soul, waking: turn_ends.append(time.perf_counter())]) as (
                soul,
                url,
            ),
        ):
            # One client for every run, as a voice stack keeps one: its making is not the soul's time.
            client = AsyncOpenAI(base_url=url + "/v1", api_key="bench", max_retries=0, timeout=60)
            for number in range(args.runs):
                for name in args.shape:
                    replies, marker = SHAPES[name]
                    specs = replies()
                    pacers = [
                        Pacer(args.ttft_ms / 1000, args.tps, marker if i == len(specs) - 1 else None)
                        for i in range(len(specs))
                    ]
                    fake.reply(*(steered(spec, after_event=pacer) for spec, pacer in zip(specs, pacers, strict=True)))
                    wakings = soul.wakings
                    start, first, answer = await ask(client, f"hello, it's Ana ({name}, {number})")
                    while not (soul.wakings == wakings + 1 and soul.state == "asleep"):
                        await asyncio.sleep(0.005)
                    spoken, call_end = pacers[-1].spoken_at, pacers[-1].ended_at
                    rows[name].append(
                        {
                            "asked": pacers[0].started_at - start,
                            "first": first - start,
                            "overhead": first - spoken,
                            "call": call_end - start,
                            "turn": turn_ends[-1] - start,
                            "answer": answer,
                        }
                    )
            await client.close()
    return rows


def pct(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))] * 1000


def main(args) -> None:
    print("\n".join(report(asyncio.run(run(args)), args)))


def report(rows, args) -> list:
    """The table, the answers heard and, last, the overhead figures, as lines."""
    out = []
    out.append(
        f"fake model: {args.ttft_ms:g} ms to first token, {args.tps:g} tokens/s ({CHARS_PER_TOKEN} characters "
        f"a token); {args.runs} runs per shape; ms from the POST, p50 / p95"
    )
    head = (
        f"{'shape':<28} {'model asked':>15} {'first chunk':>15} {'soul overhead':>15} {'| whole call':>15} "
        f"{'whole turn':>15}"
    )
    out.append(head)
    out.append("-" * len(head))
    overheads = []
    for name, runs in rows.items():
        overheads += [r["overhead"] for r in runs]

        def both(key):
            values = [r[key] for r in runs]
            return f"{pct(values, 50):>7.0f} /{pct(values, 95):>6.0f}"

        out.append(
            f"{name:<28} {both('asked'):>15} {both('first'):>15} {both('overhead'):>15} | {both('call'):>13} "
            f"{both('turn'):>15}"
        )
    out.append("\nanswers heard (last run of each shape):")
    for name, runs in rows.items():
        out.append(f"  {name:<28} {runs[-1]['answer']!r}")
    out.append(
        "\n'model asked' is when the soul's first model request of the answer reached the fake; "
        "'soul overhead' is the first chunk minus the moment the fake wrote the first spoken sentence;\n"
        "'whole call' is when the model call carrying the answer ended, 'whole turn' when the turn did: "
        "what a voice stack waiting for either would hear at best."
    )
    out.append(
        f"first_words_overhead_ms_p50={pct(overheads, 50):.1f} first_words_overhead_ms_p95={pct(overheads, 95):.1f}"
    )
    return out


def parse(argv):
    parser = argparse.ArgumentParser(prog="tools/bench-voice", description=__doc__.split("\n\n")[0])
    parser.add_argument("--ttft-ms", type=float, default=400, help="the fake model's time to first token (default 400)")
    parser.add_argument("--tps", type=float, default=40, help="the fake model's tokens per second (default 40)")
    parser.add_argument("--runs", type=int, default=10, help="runs per shape (default 10)")
    parser.add_argument("--shape", action="append", choices=list(SHAPES), help="only these shapes (default: all)")
    parser.add_argument("--verbose", action="store_true", help="log what the soul does, with times")
    args = parser.parse_args(argv)
    args.shape = args.shape or list(SHAPES)
    return args


if __name__ == "__main__":
    logging.basicConfig(
        level=logging.INFO if "--verbose" in sys.argv else logging.ERROR,
        format="%(asctime)s.%(msecs)03d %(name)s %(message)s",
        datefmt="%H:%M:%S",
    )
    main(parse(sys.argv[1:]))
