"""The loader's slots: which firmware set boots, and the one atomic step that changes it.

Sets: "root" (the cable flash's, beside the loader), ota/a, ota/b. ota/pointer.json
names the one that boots (none: root); it changes only by write(): a temporary
file in the same folder, then os.rename over the pointer, which is atomic on
LittleFS (one metadata commit) and POSIX, and recoverable on FAT (read() takes the
temporary file when the pointer is missing). A new set boots on trial: boot()
counts its boots, confirm() keeps it once it serves, and a set that fails before
serving is rolled back by start() or, after TRIES boots, by boot(). On a trial
boot start() arms the board's watchdog first and only serving feeds it, so a set
that hangs before serving resets the robot, which counts a boot (see arm()).
docs/firmware.md, "Updating over Wi-Fi", says why each step is safe.

Part of the loader (boot.py, main.py, this file): written only by cable, and it
imports nothing of any set, so no update can break what chooses between them.
"""

import json
import os
import sys


def _machine():
    """The board's `machine` module, imported when needed (None where there is none: CPython).

    Not at import: on a robot it is built in and costs nothing, but in the simulator it is a double
    loaded into the firmware's own heap (~25 KB at 256K), which an ordinary boot should not pay."""
    try:
        import machine
    except ImportError:
        return None
    return machine


LOADER = 2  # the loader's version: boot.py, main.py and this file change only by cable
TRIES = 3  # boots a new set gets to reach "serving" before boot.py switches back
RESTART_EXIT = 5  # where there is no machine.reset() (the unix port): exit with this, the simulator restarts it
ROOT_SLOT = "root"
SLOTS = ("a", "b")
POINTER = "ota/pointer.json"
NEW = POINTER + ".new"
REASON_CHARS = 300
# How long a new set has to reach "serving" on a trial boot before the watchdog resets the robot; a switch may ask
# for another time within WATCHDOG_S (the pointer's "watchdog_s"). On the ESP32 port machine.WDT is ESP-IDF's task
# watchdog: it cannot be stopped once started, and the next WDT() only sets a new timeout (ports/esp32/machine_wdt.c).
TRIAL_WATCHDOG_S = 30
WATCHDOG_S = (2, 60)

# What main.py learned while starting the running set (the body reads it).
running = {"slot": ROOT_SLOT, "dir": None, "version": None, "trial": False, "served": False}
_root = []
_watchdog = []  # the board's watchdog, once arm() started it on a trial boot


def log(*parts):
    print("[soulstack]", *parts)


def root():
    """The flash folder the loader lives in: /flash on UIFlow2, / on upstream MicroPython, the current folder elsewhere."""
    if not _root:
        if sys.platform == "esp32":
            _root.append("/flash" if "flash" in os.listdir("/") else "")
        else:
            _root.append(os.getcwd().rstrip("/"))
    return _root[0]


def path(relative):
    return root() + "/" + relative


def slot_dir(slot):
    return root() if slot == ROOT_SLOT else path("ota/" + slot)


def _exists(name):
    try:
        os.stat(name)
        return True
    except OSError:
        return False


def _valid(pointer):
    if not isinstance(pointer, dict) or not (pointer.get("active") == ROOT_SLOT or pointer.get("active") in SLOTS):
        return False
    previous = pointer.get("previous")
    return previous is None or previous == ROOT_SLOT or previous in SLOTS


def _load(name):
    try:
        with open(name) as handle:
            pointer = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    return pointer if _valid(pointer) else None


def read():
    """The pointer (a dict), or None: the root set boots."""
    pointer = _load(path(POINTER))
    if pointer is None and not _exists(path(POINTER)):
        pointer = _load(path(NEW))  # FAT: the rename removed the old pointer and stopped before renaming
    return pointer


def write(pointer, checkpoint=None, why="write"):
    """Make `pointer` the one that boots, in one atomic step (the rename; see the module doc)."""
    try:
        os.mkdir(path("ota"))
    except OSError:
        pass
    with open(path(NEW), "w") as handle:
        handle.write(json.dumps(pointer))
    if checkpoint:
        checkpoint(why + ":pointer-written")
    os.rename(path(NEW), path(POINTER))
    if checkpoint:
        checkpoint(why + ":pointer-renamed")


def restart():
    """Reset the board: machine.reset() on the robot; elsewhere exit RESTART_EXIT and let the simulator start it again."""
    try:
        reset = getattr(_machine(), "reset", None)  # the unix port's machine has none
    except MemoryError:  # the simulator's double, in a heap too full to load it: it restarts on the exit below
        reset = None
    if reset:
        reset()
    sys.exit(RESTART_EXIT)


def _cut(text):
    text = str(text)
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."


def roll_back(pointer, reason, checkpoint=None):
    """Point back at the set that ran before `pointer`'s, keeping why; returns the new pointer."""
    back = pointer.get("previous") or ROOT_SLOT
    note = {"slot": pointer["active"], "version": pointer.get("version"), "reason": _cut(reason)}
    log(
        "rolled back: the update to",
        str(note["version"]),
        "(slot " + note["slot"] + ")",
        note["reason"] + ";",
        "booting",
        str(pointer.get("previous_version")),
        "(slot " + back + ")",
    )
    new = {
        "active": back,
        "version": pointer.get("previous_version"),
        "previous": None,
        "previous_version": None,
        "trial": False,
        "boots": 0,
        "rolled_back": note,
    }
    write(new, checkpoint)
    return new


def boots_root(pointer):
    return pointer is None or pointer.get("active") == ROOT_SLOT


def active_slot(pointer):
    return ROOT_SLOT if boots_root(pointer) else pointer["active"]


def boot():
    """boot.py: count a boot of a set on trial; after TRIES of them without serving, switch back."""
    pointer = read()
    if pointer is None or boots_root(pointer) or not pointer.get("trial"):
        return pointer
    boots = pointer.get("boots", 0)
    boots = (boots if isinstance(boots, int) else 0) + 1
    if boots > TRIES:
        return roll_back(pointer, "it had not served after " + str(TRIES) + " boots")
    pointer["boots"] = boots
    write(pointer)
    log("booting the new set", str(pointer.get("version")), "on trial: boot", boots, "of", TRIES)
    return pointer


def _has_app(folder):
    return _exists(folder + "/app.py") or _exists(folder + "/app.mpy")


def start(argv):
    """main.py: run the set the pointer names; a set on trial that fails before serving is switched back."""
    pointer = read()
    slot = active_slot(pointer)
    folder = slot_dir(slot)
    trial = bool(pointer and not boots_root(pointer) and pointer.get("trial"))
    if slot != ROOT_SLOT and not _has_app(folder):
        if trial:
            roll_back(pointer, "its folder has no app")
            restart()
        log("slot", slot, "has no app; booting the set beside the loader")
        pointer, slot, folder = None, ROOT_SLOT, root()
    here = root()
    if slot == ROOT_SLOT:
        if not sys.path or sys.path[0] not in ("", here):
            sys.path.insert(0, here)
    else:
        # Only this set's folder: a module it lacks must not be found in the root set instead.
        sys.path[:] = [folder] + [entry for entry in sys.path if entry not in ("", ".", here, here + "/")]
    running["slot"] = slot
    running["dir"] = folder
    running["version"] = None if slot == ROOT_SLOT else pointer.get("version")
    running["trial"] = trial
    if trial:
        arm(pointer)
    _pack()
    try:
        import app

        app.main(argv)
    except BaseException as failure:  # KeyboardInterrupt and SystemExit too: on trial, every way out is a rollback
        code = failure.args[0] if isinstance(failure, SystemExit) and failure.args else None
        if not (running["trial"] and not running["served"]) or code == RESTART_EXIT:
            raise  # a set that serves ends as it likes; a restart it asked for counts a boot (boot())
        if hasattr(sys, "print_exception"):
            sys.print_exception(failure)
        what = type(failure).__name__
        if isinstance(failure, SystemExit):
            what = "exited" if code is None else "exited with " + str(code)
        if not isinstance(failure, SystemExit) and str(failure):
            what += ": " + str(failure)
        roll_back(read() or pointer, "it failed before serving: " + what)
        restart()
    if running["trial"] and not running["served"]:
        roll_back(read() or pointer, "it stopped before serving")
        restart()


def arm(pointer):
    """Start the board's watchdog for a set on trial: until it serves nothing feeds it, so a hang resets the robot.

    Each such reset is a boot that boot() counts, and after TRIES of them the previous set comes back with nobody
    there. The watchdog cannot be stopped (MicroPython's machine.WDT docs), so once the set serves it must go on
    feeding it until the next reset: feed() does, called by the HAL every frame (hal/esp32.py starts its own
    watchdog then, the same one on the ESP32 port). A board without one falls back on power cycles.
    """
    seconds = pointer.get("watchdog_s")
    if not isinstance(seconds, int) or isinstance(seconds, bool) or not WATCHDOG_S[0] <= seconds <= WATCHDOG_S[1]:
        seconds = TRIAL_WATCHDOG_S
    try:
        _watchdog.append(_machine().WDT(timeout=seconds * 1000))
    except (AttributeError, TypeError, ValueError, OSError) as problem:  # no machine, or no WDT, or it refused
        log("no watchdog (" + str(problem) + "): a new set that hangs is switched back after", TRIES, "power cycles")
        return
    log("watchdog armed: the new set has", seconds, "s to serve")


def watching():
    """True while the loader's watchdog waits for the running set to serve (a HAL must not feed or restart it)."""
    return bool(_watchdog) and not running["served"]


def feed():
    """Feed the loader's watchdog, once the running set serves; before that, nothing may."""
    if _watchdog and running["served"]:
        _watchdog[0].feed()


def _pack():
    """Collect now: what comes next is long-lived, and lands in the room the loader's garbage leaves, packed."""
    try:
        import gc

        gc.collect()
    except ImportError:
        pass


def confirm(checkpoint=None):
    """The running set serves: a trial ends here and the set is kept."""
    running["served"] = True
    feed()  # from here on the HAL feeds it every frame
    if not running["trial"]:
        return
    pointer = read()
    if pointer and pointer.get("active") == running["slot"] and pointer.get("trial"):
        pointer["trial"] = False
        pointer["boots"] = 0
        write(pointer, checkpoint, "confirm")
        log("the new set", str(pointer.get("version")), "serves: kept")
    running["trial"] = False


def rolled_back():
    """What the last switch back said ({"slot", "version", "reason"}), or None."""
    pointer = read()
    note = pointer.get("rolled_back") if pointer else None
    return note if isinstance(note, dict) else None


def state():
    """What POST /firmware/info reports about the sets."""
    pointer = read()
    previous = None
    if pointer and not boots_root(pointer) and pointer.get("previous"):
        previous = {"slot": pointer["previous"], "version": pointer.get("previous_version")}
    return {
        "slot": running["slot"],
        "trial": running["trial"],
        "previous": previous,
        "rolled_back": rolled_back(),
        "loader": LOADER,
        "pending": active_slot(pointer) != running["slot"],
    }


def staging_slot():
    """Where a new set is received: the slot that is not running."""
    return "b" if running["slot"] == "a" else "a"


def prepare(slot, checkpoint=None):
    """Before `slot` is overwritten: a pointer exists, naming what runs, and no longer names `slot` as previous.

    With a pointer always there before a switch, the rename is the switch (the fallback to the temporary
    name in read() then only ever applies inside FAT's remove-then-rename).
    """
    pointer = read()
    if pointer is None:
        write(
            {
                "active": ROOT_SLOT,
                "version": running["version"],
                "previous": None,
                "previous_version": None,
                "trial": False,
                "boots": 0,
                "rolled_back": None,
            },
            checkpoint,
            "begin",
        )
    elif not boots_root(pointer) and pointer.get("previous") == slot:
        pointer["previous"] = None
        pointer["previous_version"] = None
        write(pointer, checkpoint, "begin")


def switch(slot, version, checkpoint=None, watchdog_s=None):
    """The one atomic step: `slot` (staged and verified) boots next, on trial; the running set stays as previous.

    `watchdog_s`: how long the new set gets to serve before the watchdog resets the robot (None: TRIAL_WATCHDOG_S).
    """
    write(
        {
            "active": slot,
            "version": version,
            "previous": running["slot"],
            "previous_version": running["version"],
            "trial": True,
            "boots": 0,
            "rolled_back": None,
            "watchdog_s": watchdog_s or TRIAL_WATCHDOG_S,
        },
        checkpoint,
        "switch",
    )
