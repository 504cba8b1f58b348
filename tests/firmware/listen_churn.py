"""What streaming an utterance allocates per microphone read, under MicroPython, through the real Body.

Run: MICROPYPATH=.frozen:firmware micropython -X heapsize=1M tests/firmware/listen_churn.py EARS_URL FOLDER
(tests/firmware/test_listen_churn.py serves EARS_URL: a stand-in for `soulstack ears` in another process,
so its own allocations are not counted here). The fake HAL's microphone hears syllables of two lengths in turn;
the microphone hands over 100 ms per read, as the CoreS3's does (its clock moves 100 ms between reads), and
the collector is off while each utterance streams. Prints `stream_reads N` and `stream_bytes_per_read N`:
what one more 100 ms read costs the heap (the difference between the long and the short utterance, so the
fixed costs of an utterance, the connection and the answer, fall out).
"""

import asyncio
import gc
import json
import math
import sys

from body import Body
from core import config
from core.clock import FakeClock
from hal.fake import Hal

EARS_URL, FOLDER = sys.argv[1], sys.argv[2]
SOUND = FOLDER + "/sound.pcm"


def write_syllables(seconds):
    """`seconds` of 200 ms syllables (a 220 Hz tone) and 100 ms pauses, 16 kHz mono 16-bit; then the quiet room.

    Pauses, not one long tone: the end-pointer learns a steady tone as the room's noise and ends the utterance.
    """
    samples = int(16000 * seconds)
    out = bytearray(2 * samples)
    for i in range(samples):
        if i % 4800 < 3200:
            value = int(6000 * math.sin(2 * math.pi * 220 * i / 16000)) & 0xFFFF
            out[2 * i] = value & 0xFF
            out[2 * i + 1] = value >> 8
    with open(SOUND, "wb") as handle:
        handle.write(out)


settings, _ = config.parse(json.dumps({"hal": "fake", "ears_url": EARS_URL, "fake": {"mic_file": SOUND}}))
clock = FakeClock(1000)
body = Body(Hal(settings, clock=clock), settings)
listening = body.listening


async def microphone_time(done):
    # 100 ms of the room per tick, a few times faster than real time: each read finds a whole buffer.
    while not done:
        clock.advance(100)
        await asyncio.sleep_ms(50)


async def utterance(seconds):
    """(bytes allocated, reads with audio) while an utterance of `seconds` streams and is answered."""
    write_syllables(seconds)
    done = []
    ticking = asyncio.create_task(microphone_time(done))
    listening.by_touch = True
    sent_before = listening.count
    gc.collect()
    gc.disable()
    before = gc.mem_alloc()
    await listening.listen_once()
    used = gc.mem_alloc() - before
    gc.enable()
    done.append(True)
    await ticking
    assert listening.count == sent_before + 1, "no utterance was streamed"
    assert body.hal.errors == [], body.hal.errors
    return used, int(seconds * 1000) // 100


async def main():
    await utterance(0.6)  # once first: what only the first utterance makes (imports, the connection's code)
    short_bytes, short_reads = await utterance(0.6)
    long_bytes, long_reads = await utterance(2.4)
    reads = long_reads - short_reads
    print("stream_reads", reads)
    print("stream_bytes_per_read", (long_bytes - short_bytes) // reads)


asyncio.run(main())
