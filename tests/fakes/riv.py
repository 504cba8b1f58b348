"""A minimal Rive file for tests, written in the runtime's binary format: one artboard with one
state machine whose inputs we name, and a layer with the entry, any and exit states the runtime
requires. Nothing is drawn; it is enough for @rive-app/canvas to load the file and hand the page
its state machine inputs, which is what the flock's Rive renderer checks and drives.

Format (rive-runtime): "RIVE", varuint major 7, varuint minor, varuint file id, a property table
of contents (empty here: every property we write is one the runtime knows), then objects: varuint
type key, then (varuint property key, value)* ending with key 0. Strings are varuint length + UTF-8,
doubles are 32-bit floats, booleans one byte.
"""

import struct

# Type keys and property keys from the runtime's definitions (dev/defs).
BACKBOARD, ARTBOARD, STATE_MACHINE, LAYER = 23, 1, 53, 57
ANY_STATE, ENTRY_STATE, EXIT_STATE = 62, 63, 64
INPUT_TYPES = {"number": 56, "trigger": 58, "boolean": 59}
NAME, WIDTH, HEIGHT = 4, 7, 8  # component name; layout width and height
ANIMATION_NAME = 55  # a state machine's name
COMPONENT_NAME = 138  # a state machine input's or layer's name


def varuint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def string(text: str) -> bytes:
    data = text.encode()
    return varuint(len(data)) + data


def obj(type_key: int, *props: bytes) -> bytes:
    return varuint(type_key) + b"".join(props) + varuint(0)


def riv(machine: str, inputs: dict) -> bytes:
    """`inputs`: {name: "trigger" | "boolean" | "number"}."""
    header = b"RIVE" + varuint(7) + varuint(0) + varuint(1) + varuint(0)
    body = [
        obj(BACKBOARD),
        obj(
            ARTBOARD,
            varuint(NAME) + string("crow"),
            varuint(WIDTH) + struct.pack("<f", 100.0),
            varuint(HEIGHT) + struct.pack("<f", 100.0),
        ),
        obj(STATE_MACHINE, varuint(ANIMATION_NAME) + string(machine)),
        *(obj(INPUT_TYPES[kind], varuint(COMPONENT_NAME) + string(name)) for name, kind in inputs.items()),
        obj(LAYER, varuint(COMPONENT_NAME) + string("Layer 1")),
        obj(ENTRY_STATE),
        obj(ANY_STATE),
        obj(EXIT_STATE),
    ]
    return header + b"".join(body)
