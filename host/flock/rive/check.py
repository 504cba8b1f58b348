"""Reads a .riv back and checks it: every reference resolves, every part sits where the runtime
wants it, no two layers animate one property, and the `crow` machine has the contract's inputs.

The runtime does not say when a reference is wrong: a bad condition only logs "Failed to import
object" and leaves its transition unconditional, a keyed property a part lacks is dropped. So the
flock checks its own file here (the tests do, on every build) and an owner's `--rive FILE` too.
"""

from dataclasses import dataclass, field

from soulstack.flock.rive.binary import COLOR, FIELDS, TYPES, FormatError, decode

MACHINE = "crow"
# What each part's parent must be (docs/rive-crows.md: a path sits under a shape, a paint is a
# shape's direct child with a solid colour inside).
PARENTS = {
    "node": {"artboard", "node", "shape"},
    "shape": {"artboard", "node", "shape"},
    "ellipse": {"shape"},
    "points_path": {"shape"},
    "straight_vertex": {"points_path"},
    "cubic_vertex": {"points_path"},
    "fill": {"shape"},
    "stroke": {"shape"},
    "solid_color": {"fill", "stroke"},
}
CONDITION_KINDS = {
    "trigger_condition": "trigger_input",
    "bool_condition": "bool_input",
    "number_condition": "number_input",
}
INPUT_KINDS = {"trigger_input": "trigger", "bool_input": "boolean", "number_input": "number"}
STATES = {"animation_state", "any_state", "entry_state", "exit_state"}


@dataclass
class Machine:
    name: str
    inputs: dict = field(default_factory=dict)  # name -> "trigger" | "boolean" | "number"
    order: list = field(default_factory=list)  # the inputs' types in file order (conditions name them by it)
    layers: list = field(default_factory=list)  # [{"name", "states": [[type, props, [transitions]]]}]
    late_input: bool = False  # an input came after a layer


@dataclass
class Board:
    name: str
    items: list = field(default_factory=list)  # the artboard's list: itself first, then its parts
    animations: list = field(default_factory=list)  # [{"props", "keyed": [(object, property, keyframes)]}]
    machines: list = field(default_factory=list)


def read(data: bytes) -> list:
    """The file's artboards, their parts, animations and machines, grouped as the runtime groups them."""
    boards = []
    for obj in decode(data):
        kind = obj.type
        if kind == "backboard":
            continue
        if kind == "artboard":
            boards.append(Board(obj.props.get("name", ""), [obj]))
        elif not boards:
            raise FormatError(f"a {kind} comes before any artboard")
        elif kind == "linear_animation":
            boards[-1].animations.append({"props": obj.props, "keyed": []})
        elif kind == "keyed_object":
            boards[-1].animations[-1]["keyed"].append([obj.props.get("object"), None, []])
        elif kind == "keyed_property":
            boards[-1].animations[-1]["keyed"][-1][1] = obj.props.get("property")
        elif kind.startswith("keyframe"):
            boards[-1].animations[-1]["keyed"][-1][2].append(obj)
        elif kind == "state_machine":
            boards[-1].machines.append(Machine(obj.props.get("name", "")))
        elif kind in INPUT_KINDS:
            machine = boards[-1].machines[-1]
            machine.inputs[obj.props.get("name", "")] = INPUT_KINDS[kind]
            machine.order.append(kind)
            machine.late_input |= bool(machine.layers)
        elif kind == "layer":
            boards[-1].machines[-1].layers.append({"name": obj.props.get("name", ""), "states": []})
        elif kind in STATES:
            boards[-1].machines[-1].layers[-1]["states"].append([kind, obj.props, []])
        elif kind == "transition":
            boards[-1].machines[-1].layers[-1]["states"][-1][2].append([obj.props, []])
        elif kind.endswith("_condition"):
            boards[-1].machines[-1].layers[-1]["states"][-1][2][-1][1].append(obj)
        else:
            boards[-1].items.append(obj)
    return boards


def problems(data: bytes, machine_name: str = MACHINE, inputs: dict | None = None) -> list:
    """Every problem found, one sentence each; [] for a sound file. `inputs`: the contract's
    {name: kind} the machine named `machine_name` must have on every artboard that has it."""
    try:
        boards = read(data)
    except (FormatError, IndexError) as error:
        return [f"cannot read the file: {error}"]
    found = []
    if not boards:
        found.append("the file has no artboard")
    for board in boards:
        where = f"artboard {board.name!r}"
        found += [f"{where}: {p}" for p in check_parts(board)]
        found += [f"{where}: {p}" for p in check_animations(board)]
        for machine in board.machines:
            found += [f"{where}, machine {machine.name!r}: {p}" for p in check_machine(board, machine)]
        if inputs is not None:
            found += check_contract(board, machine_name, inputs)
    return found


def check_contract(board: Board, machine_name: str, inputs: dict) -> list:
    """What keeps the page from driving this artboard: the machine named `machine_name` missing, or
    one of the contract's `inputs` ({name: kind}) missing or of another kind."""
    where = f"artboard {board.name!r}"
    names = [m.name for m in board.machines]
    if machine_name not in names:
        return [f"{where} has no state machine named {machine_name!r} (it has: {', '.join(names) or 'none'})"]
    found = []
    for machine in board.machines:
        if machine.name == machine_name:
            for name, kind in inputs.items():
                have = machine.inputs.get(name)
                if have is None:
                    found.append(f"{where}: input {name} ({kind}) is missing")
                elif have != kind:
                    found.append(f"{where}: input {name} is a {have}, not a {kind}")
    return found


def check_parts(board: Board) -> list:
    found = []
    items = board.items
    for n, obj in enumerate(items[1:], start=1):
        if obj.type == "cubic_ease":
            continue
        parent = obj.props.get("parent", 0)
        if obj.type not in PARENTS:
            found.append(f"part {n} is a {obj.type}, which this checker does not know")
        elif not 0 <= parent < len(items):
            found.append(f"part {n} ({obj.type}) names parent {parent}, past the artboard's {len(items)} items")
        elif items[parent].type not in PARENTS[obj.type]:
            found.append(f"part {n} ({obj.type}) sits under a {items[parent].type}")
        if obj.type in ("fill", "stroke") and not any(
            o.type == "solid_color" and o.props.get("parent") == n for o in items
        ):
            found.append(f"part {n} ({obj.type}) has no solid colour")
    return found


def check_animations(board: Board) -> list:
    found = []
    for animation in board.animations:
        name = animation["props"].get("name", "?")
        duration = animation["props"].get("duration", 60)
        for object_id, key, frames in animation["keyed"]:
            if object_id is None or not 0 <= object_id < len(board.items):
                found.append(f"animation {name!r} keys object {object_id}, which is not in the artboard")
                continue
            target = board.items[object_id]
            if key not in TYPES.get(target.type, (0, {}))[1].values():
                found.append(f"animation {name!r} keys property {key} of a {target.type}, which has none")
            for frame in frames:
                if frame.props.get("frame", 0) > duration:
                    found.append(f"animation {name!r} has a key at frame {frame.props['frame']}, past {duration}")
                if (frame.type == "keyframe_color") != (FIELDS.get(key) == COLOR):
                    found.append(f"animation {name!r} keys property {key} with a {frame.type}")
                interpolator = frame.props.get("interpolator")
                if interpolator is not None and not (
                    0 <= interpolator < len(board.items) and board.items[interpolator].type == "cubic_ease"
                ):
                    found.append(f"animation {name!r}: interpolator {interpolator} is not a cubic ease")
    return found


def check_machine(board: Board, machine: Machine) -> list:
    found = []
    order, layers = machine.order, machine.layers
    if machine.late_input:
        found.append("an input comes after a layer (the runtime checks conditions against inputs on import)")
    owners: dict[tuple, str] = {}  # (object, property) -> the layer animating it
    for layer in layers:
        states = layer["states"]
        kinds = [state[0] for state in states]
        for needed in ("entry_state", "any_state", "exit_state"):
            if needed not in kinds:
                found.append(f"layer {layer['name']!r} has no {needed.replace('_', ' ')}")
        for n, (kind, props, transitions) in enumerate(states):
            if kind == "animation_state":
                animation = props.get("animation", -1)
                if not 0 <= animation < len(board.animations):
                    found.append(f"layer {layer['name']!r}: state {n} plays animation {animation}, which is not there")
                else:
                    for object_id, key, _ in board.animations[animation]["keyed"]:
                        owner = owners.setdefault((object_id, key), layer["name"])
                        if owner != layer["name"]:
                            found.append(
                                f"layers {owner!r} and {layer['name']!r} both animate property {key} of object {object_id}"
                            )
            for props_t, conditions in transitions:
                target = props_t.get("target", -1)
                if not 0 <= target < len(states) or target == n:
                    found.append(f"layer {layer['name']!r}: state {n} goes to state {target}, which it cannot")
                for condition in conditions:
                    input_id = condition.props.get("input", -1)
                    if not 0 <= input_id < len(order):
                        found.append(f"layer {layer['name']!r}: a condition names input {input_id}, not there")
                    elif order[input_id] != CONDITION_KINDS[condition.type]:
                        found.append(
                            f"layer {layer['name']!r}: a {condition.type.replace('_', ' ')} on a {order[input_id]}"
                        )
    return found


def used_inputs(data: bytes, machine_name: str = MACHINE) -> dict:
    """artboard name -> the inputs of `machine_name` that some condition reads."""
    out = {}
    for board in read(data):
        for machine in board.machines:
            if machine.name != machine_name:
                continue
            names = [name for name in machine.inputs]
            used = set()
            for layer in machine.layers:
                for _, _, transitions in layer["states"]:
                    for _, conditions in transitions:
                        used |= {names[c.props["input"]] for c in conditions if c.props.get("input", -1) < len(names)}
            out[board.name] = used
    return out
