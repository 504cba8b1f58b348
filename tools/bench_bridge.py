#!/usr/bin/env python3
"""How much latency the serial bridge adds per call, over a pty (goal: median < 5 ms).

The device is the real firmware in serial mode (`soulstack body sim --serial`,
MicroPython with fake hardware). Each endpoint is timed twice, one call after
another: first as raw frames written straight to the pty (the floor: the
device's own time plus the cable), then as HTTP through `soulstack bridge
serial` running as its own process. The difference is what the bridge adds.

    tools/bench-bridge [--calls 300]
"""

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
if VENV_PYTHON.exists() and Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
    os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), __file__, *sys.argv[1:]])
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from soulstack.firmware.core import serial_frames  # noqa: E402
from soulstack.serial_ports import open_serial  # noqa: E402

SOULSTACK = [sys.executable, "-c", "import sys; from soulstack.cli import main; sys.exit(main())"]
CALLS = {"status": {}, "express": {"emotion": "happy"}, "look": {"question": "what is there?"}}


def start(argv, expect):
    """Start a soulstack subprocess and return it with the first line that starts with `expect`."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    process = subprocess.Popen(
        [*SOULSTACK, *argv], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    for line in process.stdout:
        if line.startswith(expect):
            return process, line.strip()
    raise SystemExit(f"bench-bridge: {' '.join(argv)} did not print {expect!r}")


def direct(path, endpoint, body, calls):
    """Seconds per raw frame round trip on the pty, one at a time."""
    port = open_serial(path, timeout_s=5)
    times, buffer = [], b""
    try:
        for frame_id in range(1, calls + 1):
            started = time.perf_counter()
            port.write(serial_frames.request(frame_id, endpoint, body).encode())
            while True:
                buffer += port.read(max(1, port.in_waiting))
                *lines, buffer = buffer.split(b"\n")
                replies = [serial_frames.decode(line) for line in lines]
                if any(r and r.get("id") == frame_id for r in replies):
                    break
            times.append(time.perf_counter() - started)
    finally:
        port.close()
    return times


async def through_bridge(url, endpoint, body, calls):
    times = []
    async with aiohttp.ClientSession() as session:
        for _ in range(calls):
            started = time.perf_counter()
            async with session.post(f"{url}/{endpoint}", json=body) as response:
                await response.read()
                assert response.status == 200, response.status
            times.append(time.perf_counter() - started)
    return times


def figures(times):
    ordered = sorted(times)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per endpoint and path (default: %(default)s)")
    calls = parser.parse_args().calls

    sim, line = start(["body", "sim", "--serial", "--port", "0"], "serial: ")
    path = line.split(": ", 1)[1]
    bridge = None
    try:
        time.sleep(1)  # let the firmware finish booting
        raw = {ep: direct(path, ep, body, calls) for ep, body in CALLS.items()}
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            listen_port = probe.getsockname()[1]
        bridge, _ = start(
            ["bridge", "serial", "--device", path, "--listen", f"127.0.0.1:{listen_port}"], "listening on"
        )
        url = f"http://127.0.0.1:{listen_port}"
        time.sleep(1)  # the bridge opens the port and its first probe is answered
        bridged = {ep: asyncio.run(through_bridge(url, ep, body, calls)) for ep, body in CALLS.items()}
    finally:
        for process in (bridge, sim):
            if process:
                process.terminate()
                process.wait(10)

    print(f"serial bridge latency over a pty, {calls} sequential calls per row (real firmware, MicroPython, fake HAL)")
    print(f"{'endpoint':9} {'direct median/p99 ms':>22} {'bridge median/p99 ms':>22} {'added median/p99 ms':>21}")
    for endpoint in CALLS:
        d_med, d_p99 = figures(raw[endpoint])
        b_med, b_p99 = figures(bridged[endpoint])
        print(
            f"{endpoint:9} {d_med:10.2f} / {d_p99:7.2f}   {b_med:10.2f} / {b_p99:7.2f}   {b_med - d_med:9.2f} / {b_p99 - d_p99:7.2f}"
        )
    added = statistics.median(figures(bridged[ep])[0] - figures(raw[ep])[0] for ep in CALLS)
    print(f"goal: the bridge adds a median under 5 ms per call -> {'met' if added < 5 else 'NOT met'} ({added:.2f} ms)")


if __name__ == "__main__":
    main()
