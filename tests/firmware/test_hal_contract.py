"""Every HAL keeps the fake HAL's method signatures (the fake is the contract the body is tested against):
a HAL that takes fewer or other arguments fails on the robot the first time the body calls it."""

import ast

from soulstack.firmware import FIRMWARE_DIR

HALS = ["esp32.py", "generic.py", "uiflow.py"]


def methods(path):
    tree = ast.parse(path.read_text())
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and not item.name.startswith("_"):
                    found[item.name] = [a.arg for a in item.args.args]
    return found


def test_each_hal_takes_the_arguments_the_fake_hal_takes():
    contract = methods(FIRMWARE_DIR / "hal" / "fake.py")
    wrong = []
    for name in HALS:
        for method, args in methods(FIRMWARE_DIR / "hal" / name).items():
            if method in contract and len(args) != len(contract[method]):
                wrong.append(f"{name}: {method}({', '.join(args)}) but fake.py has ({', '.join(contract[method])})")
    assert not wrong, wrong
