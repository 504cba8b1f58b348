#!/usr/bin/env python3
"""Print the firmware's memory figures, measured under real MicroPython.

core_heap_bytes   heap in use after importing firmware/core's body modules (gc.mem_alloc; goal < 64 KB)
ota_heap_bytes    what core/ota (the updater over Wi-Fi, imported at boot with a token) holds on top
listen_heap_bytes what listening holds (its code, the end-pointer's pre-roll ring, the microphone buffer)
listen_heap_free  heap free (gc.mem_free) at 256K when the simulated body's microphone opens, with a token
smallest_heap     the smallest -X heapsize at which the simulated body answers 30 /look in a row
look_chunk_bytes  the largest piece the /look writer allocates (CHUNK * 4 / 3)
boot_*            from sources and from tools/flash's compiled (.mpy) layout, at 256K, median of 5 boots:
                  ms until the port accepts, heap free and used after boot (after gc), peak heap
                  (tests/firmware/boot_figures.py; --boot prints only these)
"""

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "firmware"))

import aiohttp  # noqa: E402
from aiohttp.test_utils import unused_port  # noqa: E402

from core import b64json  # noqa: E402
from soulstack.firmware import FIRMWARE_DIR  # noqa: E402
from soulstack.flash import compiled, provision  # noqa: E402
from soulstack.sim.runner import Simulator  # noqa: E402
from soulstack.sim.staging import find_tool, stage_microdot  # noqa: E402


def core_heap():
    """(core_heap_bytes, ota_heap_bytes) from tests/firmware/heap.py."""
    env = dict(os.environ, MICROPYPATH=os.pathsep.join([".frozen", str(ROOT / "firmware")]))
    out = subprocess.run(
        [find_tool("micropython"), str(ROOT / "tests/firmware/heap.py")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    figures = {key: int(value) for key, value in re.findall(r"(\w+_heap_bytes) (\d+)", out)}
    return figures["core_heap_bytes"], figures["ota_heap_bytes"], figures["listen_heap_bytes"]


def listening_heap_free():
    """gc.mem_free() as the simulated body (256K, a token, ears configured) opens its microphone after a tap."""
    import time

    lines = []
    simulator = Simulator(
        unused_port(),
        token="bench",
        show=lines.append,
        config={"ears_url": "http://127.0.0.1:9/utterance", "listen": {"conversation": False}},
    ).start()
    try:
        simulator.wait_until_serving()
        simulator.release()
        time.sleep(2)  # settled, as a robot is long after boot
        for _ in range(3):
            simulator.touch()
            time.sleep(0.2)
            simulator.touch(down=False)
            time.sleep(0.5)
        free = [int(m.group(1)) for line in lines for m in [re.search(r"listening \(heap free (\d+)\)", line)] if m]
        return min(free) if free else None
    finally:
        simulator.stop()


async def thirty_looks(heap_kb):
    port = unused_port()
    # With a token, as tools/flash sets a robot up: the updater (core/ota.py) is loaded too.
    simulator = Simulator(
        port, heap=f"{heap_kb}K", token="bench", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ).start()
    url = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession(headers={"Authorization": "Bearer bench"}) as session:
            for _ in range(100):
                try:
                    async with session.post(url + "/status", json={}) as response:
                        await response.read()
                        break
                except aiohttp.ClientError:
                    if simulator.process.poll() is not None:
                        return False
                    await asyncio.sleep(0.1)
            else:
                return False
            for _ in range(30):
                async with session.post(url + "/look", json={"question": "?"}) as response:
                    answer = await response.json()
                    if response.status != 200 or "image" not in answer:
                        return False
        return simulator.process.poll() is None
    except (TimeoutError, aiohttp.ClientError, ValueError):  # a body that stops answering fails too
        return False
    finally:
        simulator.stop()


async def smallest_heap():
    low, high = 16, 256  # KB; 256 passes (tests/firmware/test_sim.py)
    while high - low > 4:
        middle = (low + high) // 2
        if await thirty_looks(middle):
            high = middle
        else:
            low = middle
    return high


def boot_once(tree, lib, config):
    env = dict(os.environ, MICROPYPATH=os.pathsep.join([".frozen", str(tree), str(lib)]))
    argv = [
        find_tool("micropython"),
        "-X",
        "heapsize=256K",
        str(ROOT / "tests/firmware/boot_figures.py"),
        "--config",
        str(config),
        "--hal",
        "fake",
        "--host",
        "127.0.0.1",
        "--port",
        str(unused_port()),
    ]
    out = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, check=True, timeout=60).stdout
    return {key: int(value) for key, value in re.findall(r"^(\w+) (\d+)$", out, re.MULTILINE)}


def boot_figures(runs=5):
    """{"sources"|"compiled": {figure: median}}; microdot is compiled in both (the simulator always does)."""
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        stage_microdot(work / "lib", compile_mpy=True)
        config = work / "config.json"
        config.write_text(json.dumps({"hal": "fake", "wifi": {"ssid": "bench", "password": ""}, "token": "t"}))
        firmware = {k: v for k, v in provision.firmware_files().items() if k != "microdot"}
        compiled.compile_layout(firmware, "", work / "mpy")
        figures = {}
        for name, tree in (("sources", FIRMWARE_DIR), ("compiled", work / "mpy")):
            boots = [boot_once(tree, work / "lib", config) for _ in range(runs)]
            figures[name] = {key: statistics.median(boot[key] for boot in boots) for key in boots[0]}
        return figures


def print_boot():
    for name, figures in boot_figures().items():
        print(f"boot_{name:9} " + "  ".join(f"{key} {value:g}" for key, value in figures.items()))


def main():
    # --help explains and exits instead of running the benchmark.
    parser = argparse.ArgumentParser(
        prog="tools/bench-firmware", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--boot", action="store_true", help="print only the boot_* figures")
    if parser.parse_args().boot:
        print_boot()
        return
    print_boot()
    core, updater, listen = core_heap()
    print(f"core_heap_bytes   {core}")
    print(f"ota_heap_bytes    {updater}")
    print(f"listen_heap_bytes {listen}")
    print(f"listen_heap_free  {listening_heap_free()}  (256K heap, a token, the microphone just opened)")
    print(f"look_chunk_bytes  {b64json.CHUNK * 4 // 3}  (base64 of {b64json.CHUNK} JPEG bytes per write)")
    print(
        f"smallest_heap     {asyncio.run(smallest_heap())}K  (30 /look in a row, the fake camera reuses one 15.5 KB frame buffer, as a driver does)"
    )


if __name__ == "__main__":
    main()
