"""The flock's .riv writer and its crows, in pure Python: the file reads back as written, every
reference in it resolves, the `crow` machine has every input of the contract (MACHINES.crow in
host/flock/web/inputs.js, read through node) with its kind and uses each one, no two layers animate
one property, the ten figures are ten different drawings, and the same source gives the same bytes.
The checker is shown to catch each kind of fault on files broken on purpose."""

import json
import subprocess
from pathlib import Path

import pytest

from soulstack.flock.personas import BY_NAME
from soulstack.flock.rive.binary import Obj, decode, encode
from soulstack.flock.rive.builtin import built_in
from soulstack.flock.rive.check import problems, read, used_inputs
from soulstack.flock.rive.draw import Artboard, State, parse_path
from soulstack.flock.rive.figures import FIGURES, figure

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def crow_inputs():
    script = "import {MACHINES} from './host/flock/web/inputs.js'; console.log(JSON.stringify(MACHINES.crow))"
    out = subprocess.run(["node", "--input-type=module", "-e", script], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_built_in_file_is_sound_and_keeps_the_contract(crow_inputs):
    data = built_in()
    assert data.startswith(b"RIVE\x07")
    assert problems(data, "crow", crow_inputs) == []
    boards = read(data)
    assert [board.name for board in boards] == list(FIGURES)
    assert set(FIGURES) == set(BY_NAME)  # one figure per crow of crows.json, the Sentry and the Elder too
    for board in boards:
        (machine,) = board.machines
        assert machine.inputs == crow_inputs  # every input, by name and kind, and nothing else
    for name, used in used_inputs(data).items():
        assert used == set(crow_inputs), f"{name}: inputs no condition reads: {set(crow_inputs) - used}"
    print(f"built-in file: {len(data)} bytes, {len(boards)} artboards")


def test_the_same_source_gives_the_same_bytes():
    first = encode([Obj("backboard"), *(o for name in FIGURES for o in figure(name).objects())])
    second = encode([Obj("backboard"), *(o for name in FIGURES for o in figure(name).objects())])
    assert first == second == built_in()


def test_the_file_reads_back_as_written():
    objects = [Obj("backboard"), *figure("Hugin").objects()]
    back = decode(encode(objects))
    assert [o.type for o in back] == [o.type for o in objects]
    for wrote, read_back in zip(objects, back, strict=True):
        assert set(read_back.props) == set(wrote.props)
        for key, value in wrote.props.items():
            expected = value if isinstance(value, str) else pytest.approx(value, rel=1e-6)
            assert read_back.props[key] == expected, (wrote.type, key)


def test_the_ten_figures_are_different_drawings():
    parts = {name: set(figure(name).parts) for name in FIGURES}
    common = set.intersection(*parts.values())
    for name, own in parts.items():
        assert own - common, f"{name} has no part of its own"
        others = set().union(*(p for n, p in parts.items() if n != name))
        assert own - others, f"{name} shares every trait with another figure"
    tints = {tint for tint, _ in FIGURES.values()}
    assert len(tints) == len(FIGURES)
    sentry, elder = figure("Sentry"), figure("Elder")
    assert sentry.parts["crow"].props["scale_y"] > 1.05  # the Sentry stands taller
    assert {"visor", "spectacles", "stick"} <= set(sentry.parts) | set(elder.parts)


def test_svg_paths_become_vertices():
    vertices, closed = parse_path("M 0 0 L 10 0 Q 20 0 20 10 C 20 20 10 20 0 20 z")
    assert closed and len(vertices) == 4
    assert vertices[1].out is not None and vertices[2].into is not None
    vertices, closed = parse_path("m 5 5 h 10 v 10 l -10 0")
    assert not closed
    assert [(v.x, v.y) for v in vertices] == [(5, 5), (15, 5), (15, 15), (5, 15)]
    with pytest.raises(ValueError, match="one subpath"):
        parse_path("M 0 0 L 1 1 M 2 2 L 3 3")


def small_board():
    board = Artboard("test", 100, 100)
    board.node("root", x=50, y=50)
    board.shape("dot", "root", ellipse=(0, 0, 10, 10), fill=0xFF000000)
    board.animation("rest", 10)
    board.animation("up", 10, root__y=[(0, 50), (10, 20)])
    board.input("go", "trigger")
    layer = board.layer("one", State("rest", "rest"), State("up", "up"))
    layer.go("rest", "up", ("trigger", "go"))
    return board


def file_of(objects):
    return encode([Obj("backboard"), *objects])


def test_the_checker_passes_a_small_sound_file_and_holds_its_rest_values():
    objects = small_board().objects()
    assert problems(file_of(objects)) == []
    rest = read(file_of(objects))[0].animations[0]
    assert [key for _, key, _ in rest["keyed"]] == [14]  # "rest" holds y, which its layer animates


@pytest.mark.parametrize(
    "break_it, found",
    [
        (lambda objs: next(o for o in objs if o.type == "trigger_condition").props.update(input=5), "names input 5"),
        (lambda objs: next(o for o in objs if o.type == "keyed_object").props.update(object=99), "keys object 99"),
        (lambda objs: next(o for o in objs if o.type == "transition").props.update(target=9), "goes to state 9"),
        (lambda objs: next(o for o in objs if o.type == "animation_state").props.update(animation=7), "animation 7"),
        (lambda objs: objs.remove(next(o for o in objs if o.type == "solid_color")), "has no solid colour"),
        (lambda objs: next(o for o in objs if o.type == "ellipse").props.update(parent=1), "sits under a node"),
        (
            lambda objs: next(o for o in objs if o.type == "keyed_property").props.update(property=37),
            "keys property 37 of a node",
        ),
    ],
)
def test_the_checker_finds_each_broken_reference(break_it, found):
    objects = small_board().objects()
    break_it(objects)
    assert any(found in problem for problem in problems(file_of(objects))), problems(file_of(objects))


def test_the_checker_finds_two_layers_animating_one_property_and_a_mistyped_condition():
    board = small_board()
    board.input("on", "boolean")
    board.animation("down", 10, root__y=[(0, 50), (10, 80)])
    second = board.layer("two", State("down", "down"), State("rest2", "rest"))
    second.go("down", "rest2", ("on", True))
    objects = board.objects()
    found = problems(file_of(objects))
    assert any("both animate property 14" in p for p in found), found
    next(o for o in objects if o.type == "bool_condition").props.update(input=0)  # a bool test of a trigger
    assert any("bool condition on a trigger_input" in p for p in problems(file_of(objects)))


def test_the_contract_check_names_a_missing_or_mistyped_input(crow_inputs):
    board = small_board()
    found = problems(file_of(board.objects()), "crow", crow_inputs)
    assert "artboard 'test': input takeoff (trigger) is missing" in found
    assert problems(b"not a rive file") == ["cannot read the file: the file does not start with RIVE"]
