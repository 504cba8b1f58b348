"""Does `soulstack ears` stay as light as it started when robots' streams go wrong? (tools/bench-ears-memory)

A real `soulstack ears` process (its default recogniser unless --recogniser says
another) hears 30 normal utterances, then 30 rounds of streams that go wrong:
one cut off mid-way (the connection drops), one too long (refused with 413
while it streams), one the same audio again (a duplicate). Its resident memory
(VmRSS from /proc) is read after the normal ones and every 5 rounds after.

Last line: ears_rss_mb_normal=N ears_rss_mb_abandoned=N ears_rss_growth_mb=N (goal: growth <= 10).
"""

import argparse
import asyncio
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from aiohttp.test_utils import unused_port  # noqa: E402

from soulstack.fakes.soul_body import RecordingBody  # noqa: E402
from tests.ears.fakes import FakeSoul  # noqa: E402
from tests.ears.speech import speech_wav  # noqa: E402

PHRASES = ("what time is it", "remind me to call my mother tomorrow", "how is the weather today")
TYPE = "audio/L16; rate=16000; channels=1"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def send(http, url, audio, chunks=3200, break_at=None):
    """Stream `audio` as a robot does; with `break_at`, the connection drops after that many bytes."""

    async def stream():
        for at in range(0, len(audio), chunks):
            if break_at is not None and at >= break_at:
                raise ConnectionError("the robot went away")
            yield audio[at : at + chunks]

    headers = {"Content-Type": TYPE, "X-Soulstack-Body": "bench"}
    try:
        async with http.post(url, data=stream(), headers=headers) as response:
            return response.status
    except aiohttp.ClientError:
        return None


async def start_line(ears) -> str:
    """ears' start line, printed once its model is loaded; what it logs before (a first start converts
    Moonshine's decoder) is not it."""
    while line := await asyncio.to_thread(ears.stdout.readline):
        if line.startswith("ears: "):
            return line.strip()
    raise SystemExit(f"tools/bench-ears-memory: ears stopped before it listened (exit {ears.wait()})")


async def run(args) -> list:
    lines = []
    async with FakeSoul(default="Yes.") as soul, RecordingBody() as body:
        port = unused_port()
        argv = [sys.executable, "-m", "soulstack.cli", "ears", "--port", str(port), "--soul", soul.base_url]
        argv += ["--body", f"bench={body.base_url}", "--recogniser", args.recogniser, "--max-seconds", "3"]
        ears = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            lines.append(await start_line(ears))  # the soul answers meanwhile
            url = f"http://127.0.0.1:{port}/utterance"
            async with aiohttp.ClientSession() as http:
                speech = [speech_wav(phrase)[44:] for phrase in PHRASES]
                quiet = bytes(16000)
                started = rss_mb(ears.pid)
                for number in range(30):  # each a little different: no duplicates among the normal ones
                    audio = speech[number % len(speech)] + bytes(2 * number) + quiet
                    await send(http, url, audio)
                normal = rss_mb(ears.pid)
                lines.append(f"after loading: {started:.1f} MB; after 30 normal utterances: {normal:.1f} MB")
                long = speech[1] * 3 + quiet * 4  # over --max-seconds 3
                for round_ in range(1, 31):
                    audio = speech[round_ % len(speech)] + bytes(2 * (100 + round_)) + quiet
                    await send(http, url, audio, break_at=len(audio) // 2)
                    await send(http, url, long + bytes(2 * round_))
                    await send(http, url, audio)
                    await send(http, url, audio)  # the duplicate
                    if round_ % 5 == 0:
                        lines.append(
                            f"after {round_} rounds of cut-off, oversize, duplicate: {rss_mb(ears.pid):.1f} MB"
                        )
                last = rss_mb(ears.pid)
        finally:
            ears.terminate()
            ears.wait(timeout=10)
    lines.append(
        f"ears_rss_mb_normal={normal:.1f} ears_rss_mb_abandoned={last:.1f} ears_rss_growth_mb={last - normal:.1f}"
    )
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tools/bench-ears-memory", description=__doc__.split("\n")[0])
    from soulstack.ears.commands import default_recogniser

    parser.add_argument(
        "--recogniser", default=default_recogniser("en"), choices=("moonshine", "whisper", "pocketsphinx")
    )
    for line in asyncio.run(run(parser.parse_args(argv))):
        print(line, flush=True)


if __name__ == "__main__":
    main()
