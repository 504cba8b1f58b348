"""A small builder for Rive artboards: parts named by the author, written as the positions the
format wants. Shapes take SVG path strings (M L H V C Q Z, absolute or relative), so a part can be
drawn in a vector editor and pasted; animations key a part's property by name; a state machine's
layers name their states and inputs. `Artboard.objects()` gives the file's objects in order.

Two rules of the runtime are kept here once, not by every author (docs/rive-crows.md):
- leaving a state keeps what its animation set, so every animation of a layer gets a held rest
  value for every property that layer animates;
- the first shape in the file is drawn on top, so parts are written in reverse of the order they
  were added (an author adds them back to front, as in SVG).
"""

import math
import re
from dataclasses import dataclass, field

from soulstack.flock.rive.binary import TYPES, Obj

ONE_SHOT, LOOP, PING_PONG = 0, 1, 2
HOLD, LINEAR, CUBIC = 0, 1, 2
EASES = {"ease": (0.42, 0.0, 0.58, 1.0), "out": (0.0, 0.0, 0.58, 1.0), "in": (0.42, 0.0, 1.0, 1.0)}
OPS = {"==": 0, "!=": 1, "<=": 2, ">=": 3, "<": 4, ">": 5}
REST = {"x": 0.0, "y": 0.0, "rotation": 0.0, "scale_x": 1.0, "scale_y": 1.0, "opacity": 1.0}
EXIT_TIME, PERCENT = 4, 8  # transition flags
INPUT_TYPES = {"boolean": "bool_input", "number": "number_input", "trigger": "trigger_input"}

PATH_TOKEN = re.compile(r"[MLHVCQZmlhvcqz]|-?(?:\d+\.?\d*|\.\d+)(?:e-?\d+)?")


@dataclass
class Vertex:
    x: float
    y: float
    into: tuple | None = None  # the control point before it (absolute), if curved
    out: tuple | None = None  # the control point after it


def parse_path(d: str) -> tuple[list, bool]:
    """An SVG path's one subpath -> (vertices, closed). Quadratic curves become cubic ones."""
    tokens = PATH_TOKEN.findall(d)
    vertices: list[Vertex] = []
    closed, command, at = False, "M", (0.0, 0.0)
    numbers: list[float] = []

    def take(n: int) -> list[float]:
        if len(numbers) < n:
            raise ValueError(f"path {d[:40]!r}: {command} needs {n} numbers")
        return [numbers.pop(0) for _ in range(n)]

    def point(xy: list[float], relative: bool) -> tuple[float, float]:
        x, y = xy
        return (at[0] + x, at[1] + y) if relative else (x, y)

    for token in tokens + ["M"]:  # a final command flushes the last numbers
        if not token[0].isalpha():
            numbers.append(float(token))
            continue
        while numbers or command in "Zz":
            rel = command.islower()
            kind = command.upper()
            if kind == "Z":
                closed = True
                break
            if kind in "ML":
                at = point(take(2), rel)
                if kind == "M" and vertices:
                    raise ValueError(f"path {d[:40]!r}: one subpath per shape (draw another shape)")
                vertices.append(Vertex(*at))
                command = "l" if rel else "L"  # numbers after an M are line-tos
            elif kind in "HV":
                (v,) = take(1)
                at = (at[0] + v if rel else v, at[1]) if kind == "H" else (at[0], at[1] + v if rel else v)
                vertices.append(Vertex(*at))
            elif kind in "CQ":
                if kind == "C":
                    c1, c2, end = (point(take(2), rel) for _ in range(3))
                else:
                    q = point(take(2), rel)
                    end = point(take(2), rel)
                    c1 = (at[0] + 2 / 3 * (q[0] - at[0]), at[1] + 2 / 3 * (q[1] - at[1]))
                    c2 = (end[0] + 2 / 3 * (q[0] - end[0]), end[1] + 2 / 3 * (q[1] - end[1]))
                vertices[-1].out = c1
                vertices.append(Vertex(*end, into=c2))
                at = end
        command = token
    if (
        closed
        and len(vertices) > 1
        and math.dist((vertices[0].x, vertices[0].y), (vertices[-1].x, vertices[-1].y)) < 1e-6
    ):
        last = vertices.pop()
        vertices[0].into = last.into
    if len(vertices) < 2:
        raise ValueError(f"path {d[:40]!r} has fewer than two points")
    return vertices, closed


def vertex_objs(vertex: Vertex, parent: int) -> Obj:
    if vertex.into is None and vertex.out is None:
        return Obj("straight_vertex", {"parent": parent, "x": vertex.x, "y": vertex.y})
    props = {"parent": parent, "x": vertex.x, "y": vertex.y}
    for side, control in (("in", vertex.into), ("out", vertex.out)):
        if control is not None:
            dx, dy = control[0] - vertex.x, control[1] - vertex.y
            props[f"{side}_rotation"] = math.atan2(dy, dx)
            props[f"{side}_distance"] = math.hypot(dx, dy)
    return Obj("cubic_vertex", props)


@dataclass
class Part:
    name: str
    type: str
    props: dict
    children: list = field(default_factory=list)  # objects that belong to it (paths, fills, vertices)


@dataclass
class State:
    name: str
    animation: str


@dataclass
class Layer:
    name: str
    states: list  # the first is where the layer starts
    transitions: list = field(default_factory=list)  # (from, to, conditions, options)

    def go(self, source, target, *conditions, exit_time=None, mix_ms=0):
        """A transition; `conditions` are ("trigger", input), (input, True/False), (input, op, number).
        `exit_time`: a percentage of the source's animation to play out first."""
        self.transitions.append((source, target, conditions, exit_time, mix_ms))
        return self


class Artboard:
    def __init__(self, name: str, width: float, height: float):
        self.name, self.width, self.height = name, width, height
        self.parts: dict[str, Part] = {}
        self.order: list[str] = []
        self.animations: dict[str, dict] = {}  # name -> {frames, loop, tracks {(part, prop): keys}}
        self.inputs: dict[str, tuple] = {}  # name -> (kind, initial)
        self.layers: list[Layer] = []

    # --- parts, added back to front ---------------------------------------------------------
    def node(self, name: str, parent: str | None = None, **transform) -> str:
        return self._add(Part(name, "node", {"parent": parent, **transform}))

    def shape(self, name: str, parent: str, d: str | None = None, *, ellipse=None, fill=None, stroke=None, **transform):
        """A shape from an SVG path `d`, or `ellipse=(cx, cy, width, height)`; `fill` a colour
        0xAARRGGBB, `stroke` (colour, thickness)."""
        part = Part(name, "shape", {"parent": parent, **transform})
        if ellipse is not None:
            cx, cy, w, h = ellipse
            part.children.append(("ellipse", {"x": cx, "y": cy, "width": w, "height": h}))
        else:
            assert d is not None, "a shape needs a path or an ellipse"
            vertices, closed = parse_path(d)
            part.children.append(("points_path", {"closed": closed}, vertices))
        if stroke is not None:
            colour, thickness = stroke
            part.children.append(("stroke", {"thickness": thickness, "cap": 1, "join": 1}, colour))
        if fill is not None:
            part.children.append(("fill", {}, fill))
        return self._add(part)

    def _add(self, part: Part) -> str:
        if part.name in self.parts:
            raise ValueError(f"two parts named {part.name!r}")
        if part.props["parent"] is not None and part.props["parent"] not in self.parts:
            raise ValueError(f"{part.name}: no parent part {part.props['parent']!r} (add parents first)")
        self.parts[part.name] = part
        self.order.append(part.name)
        return part.name

    # --- animation and state machine ----------------------------------------------------------
    def animation(self, name: str, frames: int, loop: int = ONE_SHOT, **tracks):
        """`tracks`: "part__prop" (or "part__fill" for its fill's colour) -> [(frame, value[, ease])]."""
        self.animations[name] = {
            "frames": frames,
            "loop": loop,
            "tracks": {tuple(key.split("__")): keys for key, keys in tracks.items()},
        }

    def input(self, name: str, kind: str, initial=None):
        self.inputs[name] = (kind, initial)

    def layer(self, name: str, *states: State) -> Layer:
        layer = Layer(name, list(states))
        self.layers.append(layer)
        return layer

    def rest(self, part: str, prop: str):
        owner = self.parts[part]
        if prop == "fill":
            return next(c[2] for c in owner.children if c[0] == "fill")
        return owner.props.get(prop, REST[prop])

    def animated_by(self, layer: Layer) -> set:
        return {track for state in layer.states for track in self.animations[state.animation]["tracks"]}

    def objects(self) -> list:
        """The artboard's objects in file order (after the backboard)."""
        out = [Obj("artboard", {"name": self.name, "width": self.width, "height": self.height, "clip": False})]
        index: dict[str, int] = {}  # part name (or "part/fill" for its colour) -> component index
        components: list[Obj] = []
        # Parents first, each one's children in reverse: the part added last is written first, so it
        # is drawn on top, as the last element of an SVG is.
        children: dict[str | None, list[str]] = {}
        for name in self.order:
            children.setdefault(self.parts[name].props["parent"], []).append(name)

        def write(parent):
            for name in reversed(children.get(parent, [])):
                self._write_part(self.parts[name], index, components)
                write(name)

        write(None)
        for obj in components:
            if isinstance(obj.props.get("parent"), str):
                obj.props["parent"] = index[obj.props["parent"]]
        out += components
        eases: dict[str, int] = {}
        for ease, (x1, y1, x2, y2) in EASES.items():
            eases[ease] = 1 + len(components) + len(eases)
            out.append(Obj("cubic_ease", {"x1": x1, "y1": y1, "x2": x2, "y2": y2}))
        self._hold_rest_values()
        animation_ids: dict[str, int] = {}
        for name, anim in self.animations.items():
            animation_ids[name] = len(animation_ids)
            out += self._write_animation(name, anim, index, eases)
        out += self._write_machine(animation_ids)
        return out

    def _write_part(self, part: Part, index: dict, components: list):
        kind = TYPES[part.type][1]
        props = {k: v for k, v in part.props.items() if v is not None and k in kind}
        props["name"] = part.name
        if part.props["parent"] is None:
            props["parent"] = 0
        index[part.name] = 1 + len(components)
        components.append(Obj(part.type, props))
        me = index[part.name]
        for child in part.children:
            if child[0] == "ellipse":
                components.append(Obj("ellipse", {"parent": me, **child[1]}))
            elif child[0] == "points_path":
                path = 1 + len(components)
                components.append(Obj("points_path", {"parent": me, **child[1]}))
                components += [vertex_objs(v, path) for v in child[2]]
            else:  # fill or stroke, with its solid colour
                paint = 1 + len(components)
                components.append(Obj(child[0], {"parent": me, **child[1]}))
                index[f"{part.name}/{child[0]}"] = 1 + len(components)
                components.append(Obj("solid_color", {"parent": paint, "color": child[2]}))

    def _hold_rest_values(self):
        for layer in self.layers:
            for track in self.animated_by(layer):
                for state in layer.states:
                    tracks = self.animations[state.animation]["tracks"]
                    tracks.setdefault(track, [(0, self.rest(*track), "hold")])

    def _write_animation(self, name, anim, index, eases) -> list:
        out = [Obj("linear_animation", {"name": name, "fps": 60, "duration": anim["frames"], "loop": anim["loop"]})]
        for (part, prop), keys in sorted(anim["tracks"].items()):
            target = index[f"{part}/fill"] if prop == "fill" else index[part]
            obj_type = "solid_color" if prop == "fill" else self.parts[part].type
            out.append(Obj("keyed_object", {"object": target}))
            out.append(Obj("keyed_property", {"property": TYPES[obj_type][1]["color" if prop == "fill" else prop]}))
            for frame, value, *ease in keys:
                ease = ease[0] if ease else "ease"
                props = {"frame": frame, "value": value}
                if ease == "hold":
                    props["interpolation"] = HOLD
                elif ease == "linear":
                    props["interpolation"] = LINEAR
                else:
                    props |= {"interpolation": CUBIC, "interpolator": eases[ease]}
                out.append(Obj("keyframe_color" if prop == "fill" else "keyframe_double", props))
        return out

    def _write_machine(self, animation_ids) -> list:
        out = [Obj("state_machine", {"name": "crow"})]
        input_ids: dict[str, int] = {}
        for name, (kind, initial) in self.inputs.items():
            input_ids[name] = len(input_ids)
            props = {"name": name}
            if initial is not None:
                props["value"] = initial
            out.append(Obj(INPUT_TYPES[kind], props))
        for layer in self.layers:
            out.append(Obj("layer", {"name": layer.name}))
            states = {state.name: 3 + n for n, state in enumerate(layer.states)}
            out.append(Obj("entry_state"))
            out.append(Obj("transition", {"target": 3}))
            out += [Obj("any_state"), Obj("exit_state")]
            for state in layer.states:
                out.append(Obj("animation_state", {"animation": animation_ids[state.animation]}))
                for source, target, conditions, exit_time, mix_ms in layer.transitions:
                    if source == state.name:
                        out += self._write_transition(states[target], conditions, exit_time, mix_ms, input_ids)
        return out

    def _write_transition(self, target, conditions, exit_time, mix_ms, input_ids) -> list:
        props = {"target": target}
        if exit_time is not None:
            props |= {"flags": EXIT_TIME | PERCENT, "exit_time": exit_time}
        if mix_ms:
            props["duration"] = mix_ms
        out = [Obj("transition", props)]
        for condition in conditions:
            if condition[0] == "trigger":
                out.append(Obj("trigger_condition", {"input": input_ids[condition[1]]}))
            elif len(condition) == 2:
                out.append(Obj("bool_condition", {"input": input_ids[condition[0]], "op": 0 if condition[1] else 1}))
            else:
                name, op, value = condition
                out.append(Obj("number_condition", {"input": input_ids[name], "op": OPS[op], "value": value}))
        return out
