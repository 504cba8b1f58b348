"""The flock's built-in .riv: the ten figures of figures.py in one file, written on first use and
kept for the life of the process (no binary in git, no build step)."""

import functools

from soulstack.flock.rive.binary import Obj, encode
from soulstack.flock.rive.figures import FIGURES, figure


@functools.cache
def built_in() -> bytes:
    objects = [Obj("backboard")]
    for name in FIGURES:
        objects += figure(name).objects()
    return encode(objects)
