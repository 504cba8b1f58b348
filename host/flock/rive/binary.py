"""The .riv binary format: what the flock writes and reads back (no dependency).

A file is "RIVE", the major and minor version and a file id (varuints), the property table, then
objects. An object is its type key, then (property key, value) pairs, ending with key 0. The
property table lists every property key the file uses with its field type, so that a runtime
skips a key it does not know instead of dropping the object (docs/rive-crows.md has the facts).

Type and property keys come from the runtime's own definitions (rive-runtime, dev/defs); only the
ones the crows use are named here. The same idea has different keys on different types (a name is
4 on a component, 55 on an animation, 138 on an input), so properties are named per type.
"""

import struct
from dataclasses import dataclass, field

MAJOR, MINOR = 7, 0  # the pinned @rive-app/canvas reads major 7 only

# Field types, as the property table numbers them.
UINT, STRING, DOUBLE, COLOR = 0, 1, 2, 3
BOOL = 4  # stored as a uint in the table; one byte in an object

TRANSFORM = {"name": 4, "parent": 5, "x": 13, "y": 14, "rotation": 15, "scale_x": 16, "scale_y": 17, "opacity": 18}

# type name -> (type key, {property name: property key})
TYPES = {
    "backboard": (23, {}),
    "artboard": (1, {"name": 4, "width": 7, "height": 8, "clip": 196}),
    "node": (2, TRANSFORM),
    "shape": (3, TRANSFORM),
    "ellipse": (4, TRANSFORM | {"width": 20, "height": 21}),
    "points_path": (16, TRANSFORM | {"closed": 32}),
    "straight_vertex": (5, {"parent": 5, "x": 24, "y": 25, "radius": 26}),
    "cubic_vertex": (
        6,
        {"parent": 5, "x": 24, "y": 25, "in_rotation": 84, "in_distance": 85, "out_rotation": 86, "out_distance": 87},
    ),
    "fill": (20, {"name": 4, "parent": 5}),
    "stroke": (24, {"name": 4, "parent": 5, "thickness": 47, "cap": 48, "join": 49}),
    "solid_color": (18, {"parent": 5, "color": 37}),
    "cubic_ease": (28, {"x1": 63, "y1": 64, "x2": 65, "y2": 66}),
    "linear_animation": (31, {"name": 55, "fps": 56, "duration": 57, "loop": 59}),
    "keyed_object": (25, {"object": 51}),
    "keyed_property": (26, {"property": 53}),
    "keyframe_double": (30, {"frame": 67, "interpolation": 68, "interpolator": 69, "value": 70}),
    "keyframe_color": (37, {"frame": 67, "interpolation": 68, "interpolator": 69, "value": 88}),
    "state_machine": (53, {"name": 55}),
    "number_input": (56, {"name": 138, "value": 140}),
    "trigger_input": (58, {"name": 138}),
    "bool_input": (59, {"name": 138, "value": 141}),
    "layer": (57, {"name": 138}),
    "animation_state": (61, {"animation": 149}),
    "any_state": (62, {}),
    "entry_state": (63, {}),
    "exit_state": (64, {}),
    "transition": (65, {"target": 151, "flags": 152, "duration": 158, "exit_time": 160}),
    "trigger_condition": (68, {"input": 155}),
    "number_condition": (70, {"input": 155, "op": 156, "value": 157}),
    "bool_condition": (71, {"input": 155, "op": 156}),
}
TYPE_NAMES = {key: name for name, (key, _) in TYPES.items()}

# property key -> field type
FIELDS = {
    **dict.fromkeys((4, 55, 138), STRING),
    **dict.fromkeys((7, 8, 13, 14, 15, 16, 17, 18, 20, 21, 24, 25, 26, 47, 63, 64, 65, 66, 70, 84, 85, 86, 87), DOUBLE),
    **dict.fromkeys((140, 157), DOUBLE),
    **dict.fromkeys((37, 88), COLOR),
    **dict.fromkeys((32, 141, 196), BOOL),
    **dict.fromkeys((5, 48, 49, 51, 53, 56, 57, 59, 67, 68, 69, 149, 151, 152, 155, 156, 158, 160), UINT),
}


@dataclass
class Obj:
    """One object of the file: its type name and its properties by name (unset ones are the
    runtime's defaults and are not written)."""

    type: str
    props: dict = field(default_factory=dict)

    def key_of(self, prop: str) -> int:
        keys = TYPES[self.type][1]
        if prop not in keys:
            raise KeyError(f"a {self.type} has no property {prop!r}")
        return keys[prop]


def varuint(n: int) -> bytes:
    if n < 0:
        raise ValueError(f"a varuint cannot be negative: {n}")
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def encode_value(kind: int, value) -> bytes:
    if kind == STRING:
        data = value.encode()
        return varuint(len(data)) + data
    if kind == DOUBLE:
        return struct.pack("<f", value)
    if kind == COLOR:
        return struct.pack("<I", value)
    if kind == BOOL:
        return bytes([1 if value else 0])
    return varuint(int(value))


def encode(objects: list) -> bytes:
    """The file's bytes. Deterministic: properties are written in key order, the table sorted."""
    body = bytearray()
    used = set()
    for obj in objects:
        body += varuint(TYPES[obj.type][0])
        for key, value in sorted((obj.key_of(p), v) for p, v in obj.props.items()):
            used.add(key)
            body += varuint(key) + encode_value(FIELDS[key], value)
        body += varuint(0)
    return header(sorted(used)) + bytes(body)


def header(keys: list) -> bytes:
    out = bytearray(b"RIVE" + varuint(MAJOR) + varuint(MINOR) + varuint(0))
    for key in keys:
        out += varuint(key)
    out += varuint(0)
    for start in range(0, len(keys), 4):  # four 2-bit field types per uint32
        packed = 0
        for n, key in enumerate(keys[start : start + 4]):
            packed |= (FIELDS[key] if FIELDS[key] != BOOL else UINT) << (2 * n)
        out += struct.pack("<I", packed)
    return bytes(out)


class FormatError(ValueError):
    """A file that is not a .riv this reader understands; the message says where."""


class Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def varuint(self) -> int:
        n = shift = 0
        while True:
            if self.at >= len(self.data):
                raise FormatError(f"the file ends inside a number at byte {self.at}")
            byte = self.data[self.at]
            self.at += 1
            n |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return n

    def take(self, size: int) -> bytes:
        if self.at + size > len(self.data):
            raise FormatError(f"the file ends inside a value at byte {self.at}")
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk

    def value(self, kind: int):
        if kind == STRING:
            return self.take(self.varuint()).decode("utf-8", "replace")
        if kind == DOUBLE:
            return struct.unpack("<f", self.take(4))[0]
        if kind == COLOR:
            return struct.unpack("<I", self.take(4))[0]
        if kind == BOOL:
            return bool(self.take(1)[0])
        return self.varuint()


def decode(data: bytes) -> list:
    """The file's objects, as `Obj`s (a type or property this module does not name keeps its key
    as its name: "type 99", "key 300"). Raises FormatError for a file it cannot read."""
    reader = Reader(data)
    if reader.take(4) != b"RIVE":
        raise FormatError("the file does not start with RIVE")
    major, _minor, _file_id = reader.varuint(), reader.varuint(), reader.varuint()
    if major != MAJOR:
        raise FormatError(f"version {major} (the runtime reads {MAJOR})")
    keys = []
    while key := reader.varuint():
        keys.append(key)
    table = {}
    for start in range(0, len(keys), 4):
        packed = struct.unpack("<I", reader.take(4))[0]
        for n, key in enumerate(keys[start : start + 4]):
            table[key] = (packed >> (2 * n)) & 3
    objects = []
    while reader.at < len(reader.data):
        type_key = reader.varuint()
        name = TYPE_NAMES.get(type_key, f"type {type_key}")
        names = {key: prop for prop, key in TYPES[name][1].items()} if name in TYPES else {}
        props = {}
        while key := reader.varuint():
            kind = FIELDS.get(key, table.get(key))
            if kind is None:
                raise FormatError(f"property {key} of a {name} is in neither the runtime's keys nor the table")
            props[names.get(key, f"key {key}")] = reader.value(kind)
        objects.append(Obj(name, props))
    return objects
