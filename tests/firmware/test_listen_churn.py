"""Streaming an utterance under real MicroPython: what one 100 ms microphone read costs the heap.

tests/firmware/listen_churn.py runs the real Body and listening with the fake HAL's microphone (100 ms
per read, as the CoreS3's M5.Mic hands it over) and streams to the stand-in for `soulstack ears` here.
The frames of one read go out as one chunk, through views made at boot: measured 1920 bytes a read
(8647 when each 20 ms frame was a chunk of its own, with its own view, task and coroutines).
"""

import asyncio

from soulstack.serving import listening
from tests.ears.fakes import RecordingEars
from tests.firmware.helpers import TESTS, micropython


async def test_one_microphone_read_is_one_chunk_and_allocates_little(tmp_path):
    recorder = RecordingEars("a tone")
    async with listening(recorder.app(), "127.0.0.1", 0) as port:
        url = f"http://127.0.0.1:{port}/utterance"
        result = await asyncio.to_thread(micropython, TESTS / "listen_churn.py", url, str(tmp_path), heap="1M")
    assert result.returncode == 0, result.stdout + result.stderr
    figures = dict(line.split() for line in result.stdout.splitlines() if line.startswith("stream_"))
    short, again, long = (len(stream) for _headers, stream in recorder.streams)
    assert short == again and long - short == 18 * 3200  # 1.8 s more speech, every byte of it streamed
    assert int(figures["stream_reads"]) == 18
    assert int(figures["stream_bytes_per_read"]) < 3000, figures  # was 8647: a chunk, a view, a task per frame
