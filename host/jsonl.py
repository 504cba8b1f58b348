"""JSON Lines files that a kill -9 may have cut short, read back line by line.

Our writers append one JSON record per line (flush, often fsync), so a crash loses at most
the line being written: the file's last line may be torn. `read_records` hands every record
to the caller and says which lines it skipped and where the good part ends; a caller that
appends to the file again cuts the torn tail off first (`cut_torn_tail`), so its next line
starts clean instead of continuing the torn one. Each caller words its own warnings.

Lines are split on the bytes json.dumps always escapes (\\n, \\r), never on a character a
record's text may hold (U+2028, U+0085), and blank lines are passed over.
"""

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Skipped:
    number: int  # the line's number, from 1
    last: bool  # the file's last line: torn by a crash, most likely
    error: Exception  # why: not JSON, or what `take` raised


@dataclass
class Reading:
    size: int  # bytes in the file
    good_end: int  # just past the last line kept as it is: a bad last line is not kept
    ends_with_newline: bool  # the kept part does
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """Nothing to cut: no torn tail, and the next append starts on a line of its own."""
        return self.good_end == self.size and (self.ends_with_newline or self.size == 0)


def read_records(path, take: Callable[[Any], object]) -> Reading:
    """Call `take` with each line's JSON value, in order. A line that is not JSON, or that
    `take` refuses (ValueError, KeyError, TypeError), is skipped and listed; a bad line in the
    middle stays in the file, a bad last line is left out of the good part. FileNotFoundError
    when there is no file."""
    data = Path(path).read_bytes()
    lines = data.splitlines(keepends=True)
    reading = Reading(size=len(data), good_end=0, ends_with_newline=False)
    for number, line in enumerate(lines, 1):
        last = number == len(lines)
        if line.strip():
            try:
                take(json.loads(line.rstrip(b"\r\n")))  # an error names the line's text, not its end
            except (ValueError, KeyError, TypeError) as error:
                reading.skipped.append(Skipped(number, last, error))
                if last:
                    break
        reading.good_end += len(line)
        reading.ends_with_newline = line.endswith(b"\n")
    return reading


def cut_torn_tail(path, reading: Reading) -> None:
    """Drop what follows the good part of `path` (as `read_records` found it) and end the file
    with a newline, durably, so appends start clean. Nothing when it is `clean` already."""
    if reading.clean:
        return
    with open(path, "r+b") as handle:
        handle.truncate(reading.good_end)
        if reading.good_end and not reading.ends_with_newline:
            handle.seek(reading.good_end)
            handle.write(b"\n")
        handle.flush()
        os.fsync(handle.fileno())
