"""A soak under strangers (run it as tools/bench-soak).

Starts a real `soulstack soul` (the brainstem, a Body Protocol body on loopback) and a real
`soulstack flock` (the brainstem: lists are accepted and skipped honestly), each limited to
1,024 open files as a default Linux account is. Three phases of `--seconds` each:

- before: people's requests alone (the flock's /api/trust, the soul's /health, each every
  20 ms) and a stream of lists (one every 100 ms);
- under attack: the same, while strangers from other loopback addresses (127.0.0.2 and up)
  hold slowloris connections (a header line trickled every second, re-opened when closed:
  `--slowloris` per server) and readers open the flock's event stream and leave at once
  (`--sse` of them in all; the phase lasts until they all have, three minutes at most);
- after: people's requests alone again, once the attackers are gone.

RSS and open files of both processes are read at the end of each phase (after a settle for
the first and last). Printed per phase: p50/p99 of people's requests, refused ones, RSS and
files. Last line:
    rss_growth_mb=X fd_growth=N legit_p99_ms_under_attack=X
(growth: after minus before, the larger of the two processes).
"""

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from aiohttp.test_utils import unused_port  # noqa: E402

from soulstack.fakes.soul_body import RecordingBody  # noqa: E402


def at_1024_files():
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


def rss_mb(pid) -> float:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def files(pid) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def p(samples, q) -> float:
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def start(folder, body, env):
    flock_port, soul_port = unused_port(), unused_port()
    common = {"cwd": ROOT, "stdout": subprocess.DEVNULL, "preexec_fn": at_1024_files, "env": env}
    flock = subprocess.Popen(
        [sys.executable, "-m", "soulstack.cli", "flock", "--provider", "brainstem", "--port", str(flock_port)]
        + ["--data", str(folder / "crows"), "--lists-per-minute", "100000"],
        stderr=open(folder / "flock.log", "w"),
        **common,
    )
    config = folder / "soul.config.json"
    config.write_text(
        json.dumps(
            {
                "soulDir": "soul",
                "timezone": "UTC",
                "body": {"name": "the bench body", "endpoints": body.endpoints()},
                "persona": {"name": "Pip", "human": "Ana"},
                "nudge": {"port": soul_port},
            }
        )
    )
    soul = subprocess.Popen(
        [sys.executable, "-m", "soulstack.cli", "soul", "--config", str(config)],
        stderr=open(folder / "soul.log", "w"),
        **common,
    )
    return flock, flock_port, soul, soul_port


async def up(http, url, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            async with http.get(url) as response:
                if response.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.1)
    raise SystemExit(f"bench-soak: {url} never answered")


async def settle(pid, seconds=20.0) -> float:
    """RSS once it stops moving (the flock trains Jev in a thread after it starts)."""
    readings, deadline = [rss_mb(pid)], time.monotonic() + seconds
    while time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        readings.append(rss_mb(pid))
        if len(readings) >= 4 and max(readings[-4:]) - min(readings[-4:]) <= 0.5:
            break
    return readings[-1]


class People:
    """People's requests and a stream of lists, timed, until `stop` is set."""

    def __init__(self, http, flock_port, soul_port):
        self.http = http
        self.urls = (f"http://127.0.0.1:{flock_port}/api/trust", f"http://127.0.0.1:{soul_port}/health")
        self.lists = f"http://127.0.0.1:{flock_port}/api/lists"
        self.samples, self.failed = [], 0

    async def ask(self, stop):
        while not stop.is_set():
            for url in self.urls:
                started = time.monotonic()
                try:
                    async with self.http.get(url, timeout=aiohttp.ClientTimeout(total=10)) as response:
                        await response.read()
                        ok = response.status == 200
                except (TimeoutError, aiohttp.ClientError):
                    ok = False
                if ok:
                    self.samples.append(time.monotonic() - started)
                else:
                    self.failed += 1
            await asyncio.sleep(0.02)

    async def send_lists(self, stop):
        n = 0
        while not stop.is_set():
            n += 1
            body = {"text": f"- soak errand {n}\n- and another", "requester": "ada"}
            try:
                async with self.http.post(self.lists, json=body) as response:
                    if response.status != 202:
                        self.failed += 1
            except aiohttp.ClientError:
                self.failed += 1
            await asyncio.sleep(0.1)


async def slowloris(port, count, stop, address_base=2):
    """Hold `count` connections that trickle a request head, from 127.0.0.<address_base...>."""

    async def one(k):
        address = f"127.0.0.{address_base + k % 50}"
        while not stop.is_set():
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(address, 0))
            except OSError:
                await asyncio.sleep(0.5)
                continue
            try:
                writer.write(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                while not stop.is_set() and not reader.at_eof():
                    writer.write(b"X-Slow: 1\r\n")
                    await asyncio.sleep(1.0)
                    if writer.is_closing():
                        break
            except OSError:
                pass
            finally:
                writer.close()
            await asyncio.sleep(0.1)

    await asyncio.gather(*(one(k) for k in range(count)))


async def sse_churn(port, count, stop, workers=16):
    request = f"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    left = iter(range(count))
    done = 0

    async def worker():
        nonlocal done
        for _ in left:
            if stop.is_set():
                return
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.200", 0))
                writer.write(request)
                await reader.readuntil(b"\r\n\r\n")
                writer.close()
                done += 1
            except (OSError, asyncio.IncompleteReadError):
                await asyncio.sleep(0.05)

    await asyncio.gather(*(worker() for _ in range(workers)))
    return done


async def phase(name, people, seconds, *attacks, until_done=None, most_seconds=180.0):
    """`seconds` of people's requests (with `attacks` running); with `until_done` (the index of an
    attack), also until that attack has finished, for at most `most_seconds`."""
    stop = asyncio.Event()
    people.samples, people.failed = [], 0
    tasks = [asyncio.ensure_future(people.ask(stop)), asyncio.ensure_future(people.send_lists(stop))]
    tasks += [asyncio.ensure_future(attack(stop)) for attack in attacks]
    started = time.monotonic()
    if until_done is not None:
        await asyncio.wait({tasks[2 + until_done]}, timeout=most_seconds)
    await asyncio.sleep(max(0.0, seconds - (time.monotonic() - started)))
    stop.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    return results[2:]


async def main(args) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
    folder = Path(tempfile.mkdtemp(prefix="bench-soak-"))
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "SOUL_CONFIG")}
    async with RecordingBody() as body:
        flock, flock_port, soul, soul_port = start(folder, body, env)
        try:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=8)) as http:
                await up(http, f"http://127.0.0.1:{flock_port}/api/crows")
                await up(http, f"http://127.0.0.1:{soul_port}/health")
                people = People(http, flock_port, soul_port)
                pids = {"flock": flock.pid, "soul": soul.pid}
                await sse_churn(flock_port, 500, asyncio.Event())  # what a first stream allocates once
                before = {name: (await settle(pid), files(pid)) for name, pid in pids.items()}

                await phase("before", people, args.seconds)
                quiet = list(people.samples), people.failed
                print(f"before: p50 {p(quiet[0], 0.5):.1f} ms p99 {p(quiet[0], 0.99):.1f} ms, {quiet[1]} failed")

                churned = await phase(
                    "attack",
                    people,
                    args.seconds,
                    lambda stop: slowloris(flock_port, args.slowloris, stop),
                    lambda stop: slowloris(soul_port, args.slowloris, stop, address_base=60),
                    lambda stop: sse_churn(flock_port, args.sse, stop),
                    until_done=2,  # every SSE reader came and went (on a busy machine that takes longer)
                )
                attack = list(people.samples), people.failed
                during = {name: (rss_mb(pid), files(pid)) for name, pid in pids.items()}
                print(
                    f"under attack ({args.slowloris} slowloris per server, {churned[2]} SSE readers came and went): "
                    f"p50 {p(attack[0], 0.5):.1f} ms p99 {p(attack[0], 0.99):.1f} ms, {attack[1]} failed"
                )
                await asyncio.sleep(2)  # the attackers' connections close
                await phase("after", people, args.seconds)
                calm = list(people.samples), people.failed
                after = {name: (await settle(pid), files(pid)) for name, pid in pids.items()}
                print(f"after: p50 {p(calm[0], 0.5):.1f} ms p99 {p(calm[0], 0.99):.1f} ms, {calm[1]} failed")
                for name in pids:
                    print(
                        f"{name}: RSS {before[name][0]:.1f} -> {during[name][0]:.1f} -> {after[name][0]:.1f} MB, "
                        f"files {before[name][1]} -> {during[name][1]} -> {after[name][1]}"
                    )
        finally:
            for process in (flock, soul):
                process.terminate()
                process.wait(timeout=30)
            shutil.rmtree(folder, ignore_errors=True)
    rss_growth = max(after[name][0] - before[name][0] for name in pids)
    fd_growth = max(after[name][1] - before[name][1] for name in pids)
    print(f"rss_growth_mb={rss_growth:.1f} fd_growth={fd_growth} legit_p99_ms_under_attack={p(attack[0], 0.99):.1f}")
    return 0


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each phase (default 15)")
    parser.add_argument("--slowloris", type=int, default=1100, help="slowloris connections per server (default 1100)")
    parser.add_argument("--sse", type=int, default=10_000, help="SSE readers that come and go (default 10000)")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse())))
