"""Resident memory and start-up time of each home service (`soulstack home init`'s), on this machine.

Each service starts as its unit starts it (the installed `soulstack` command, a token in its
environment), on loopback and a free port. Start-up: from the spawn to the first answer on its port
(a 401 counts: the server is up and checks tokens). Resident memory: VmRSS from /proc after it has
run for a few seconds, the soul after its first waking (on its brainstem: no model is called).
Prints one line per service and a last line with every figure.
"""

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

SETTLE_S = 5.0
COMMAND = [str(Path(sys.executable).parent / "soulstack")]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=1)
    except urllib.error.HTTPError:
        return True  # 401, 404: the server is listening and answering
    except OSError:
        return False
    return True


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def services(folder: Path) -> dict:
    """name -> (argv, environment, URL to ask), as home init's units run them (but on loopback)."""
    config = folder / "soul.config.json"
    subprocess.run([*COMMAND, "soul", "--init", "--config", str(config)], check=True, capture_output=True)
    ports = {name: free_port() for name in ("soul", "tts", "flock", "ears")}
    token = {"NUDGE_TOKEN": "bench", "TTS_TOKEN": "bench", "FLOCK_TOKEN": "bench", "EARS_TOKEN": "bench"}
    found = {
        "soul": ([*COMMAND, "soul", "--config", str(config), "--port", str(ports["soul"])], "/health"),
        "tts": ([*COMMAND, "tts", "--port", str(ports["tts"])], "/"),
        "flock": (
            [
                *COMMAND,
                "flock",
                "--port",
                str(ports["flock"]),
                "--data",
                str(folder / "crows"),
                "--provider",
                "brainstem",
            ],
            "/api/lists",
        ),
    }
    ears = subprocess.run([*COMMAND, "ears", "--help"], capture_output=True)
    if ears.returncode == 0:  # `soulstack ears` exists in this install
        ears_argv = [*COMMAND, "ears", "--port", str(ports["ears"]), "--body", "stackchan=http://127.0.0.1:9"]
        found["ears"] = (ears_argv, "/")
    env = {**{k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}, **token}
    return {name: (argv, env, f"http://127.0.0.1:{ports[name]}{path}") for name, (argv, path) in found.items()}


def measure(name: str, argv: list, env: dict, url: str, folder: Path) -> tuple[float, float]:
    started = time.monotonic()
    process = subprocess.Popen(argv, env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not answers(url):
            if process.poll() is not None:
                raise SystemExit(f"{name} stopped with exit code {process.returncode} before it answered")
            if time.monotonic() - started > 60:
                raise SystemExit(f"{name} did not answer within 60 s")
            time.sleep(0.02)
        start_s = time.monotonic() - started
        time.sleep(SETTLE_S)
        return start_s, rss_mb(process.pid)
    finally:
        process.terminate()
        process.wait(20)


def main() -> int:
    figures = {}
    with tempfile.TemporaryDirectory(prefix="soulstack-bench-home-") as folder:
        for name, (argv, env, url) in services(Path(folder)).items():
            start_s, rss = measure(name, argv, env, url, Path(folder))
            figures[name] = (start_s, rss)
            print(f"{name}: start-up {start_s:.2f} s, resident memory {rss:.0f} MB", flush=True)
    total = sum(rss for _, rss in figures.values())
    cpus = os.cpu_count()
    print(f"machine: {cpus} CPUs, Python {sys.version.split()[0]}; all services together: {total:.0f} MB")
    print(
        " ".join(f"{name}_start_s={s:.2f} {name}_rss_mb={r:.0f}" for name, (s, r) in figures.items())
        + f" total_rss_mb={total:.0f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
