"""The flock's own Rive file, written from readable source in pure Python.

- `binary.py`: the .riv format (objects, the property table, deterministic bytes) and its reader.
- `check.py`: reads a file back and checks every reference, and the contract's `crow` machine.
- `draw.py`: the builder the crows are described with (shapes from SVG-like paths, animations,
  layers), which turns names into the positions the format uses.
- `crow.py`: the crow itself: its parts, poses and state machine; `figures.py`: the ten figures.
- `builtin.py`: the built-in file, generated once per process and cached.

docs/rive-crows.md tells the story; docs/ui-inputs.md is the contract the file keeps.
"""
