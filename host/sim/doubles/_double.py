"""What every double shares: argument checking as the vendors' bindings do it, the journal, the world.

`accept(call, args, kwargs, spec)` parses a call the way MicroPython's
`mp_arg_parse_all` does for UIFlow2's C bindings and for `machine`/`network`
(py/argcheck.c): positional arguments fill the spec in order, keywords by
name; too many, an unknown keyword, a missing required one or a wrong type
raise TypeError, as the real call would. A spec entry is (name, kind,
required) with kind one of "int" (an int; a bool passes, as
mp_obj_get_int accepts it), "bool" (anything, read for its truth), "obj"
(anything), "str", "buf" (bytes, bytearray or memoryview: the buffer
protocol), or a class the value must be an instance of.

The journal is one JSON object per line in $SOULSTACK_DOUBLES/journal:
{"call": "Speaker.playRaw", ...the parsed arguments}. Buffers are written
as their length (and, for UART writes, as hex).

The world is a folder of one-word files the test or the person writes:
  wifi     up (default) | down | no_ap | wrong_password | handshake_timeout | flaky
  camera   ok (default) | fail (init raises) | old (a build with capture_to_jpg, no jpg module)
           | no_encoder (neither)
  display  ok (default) | missing (a UIFlow2 board without a screen: no M5.Lcd, no M5.Display)
  efont    ok (default) | missing (no EFontCN24/JA24/KR24 in M5.Lcd.FONTS)
  canvas   ok (default) | fail (newCanvas raises: no PSRAM)
  dl       ok (default) | missing (no face detection module)
  speaker  ok (default) | fail (Speaker.begin() returns False)
  face     present: the detector sees one face; absent: none
  touch    present: one finger on the screen; broken: getCount() raises OSError
  button   present: BtnA was pressed (consumed by the next wasPressed()); broken: it raises
  wdt      ok (default) | fail (machine.WDT() raises OSError)
  accel    "x y z" in g (default "0 0 1"); broken: getAccel() raises OSError
  sound    the path of a 16 kHz mono WAV: it plays into the room once, from when Mic first sees it
  mic      ok (default) | fail (Mic.begin() returns False)
"""

import json
import os

FOLDER = os.getenv("SOULSTACK_DOUBLES") or ""
_journal = []  # the open journal file, once written to


def words(name):
    """The words in $SOULSTACK_DOUBLES/<name>; None when there is no such file."""
    if not FOLDER:
        return None
    try:
        with open(FOLDER + "/" + name) as handle:
            return handle.read().split()
    except OSError:
        return None


def world(name, default=""):
    """The first word of $SOULSTACK_DOUBLES/<name> ("present" when empty), `default` without the file."""
    found = words(name)
    if found is None:
        return default
    return found[0] if found else "present"


def exists(name):
    return world(name, "") != ""


def consume(name):
    """True once per file: the file is removed (a button press happens once)."""
    if not exists(name):
        return False
    try:
        os.remove(FOLDER + "/" + name)
    except OSError:
        pass
    return True


def record(call, fields):
    if not FOLDER:
        return
    if not _journal:
        _journal.append(open(FOLDER + "/journal", "a"))
    entry = {"call": call}
    for key in fields:
        value = fields[key]
        if isinstance(value, (bytes, bytearray, memoryview)):
            value = len(value)
        elif not isinstance(value, (int, float, str, bool, list, tuple)) and value is not None:
            value = type(value).__name__
        entry[key] = value
    _journal[0].write(json.dumps(entry) + "\n")
    _journal[0].flush()


def _type_ok(value, kind):
    if kind in ("obj", "bool"):
        return True
    if kind == "int":
        return isinstance(value, int)
    if kind == "str":
        return isinstance(value, str)
    if kind == "buf":
        return isinstance(value, (bytes, bytearray, memoryview))
    return isinstance(value, kind)


def _kind_name(kind):
    return kind if isinstance(kind, str) else kind.__name__


def accept(call, args, kwargs, spec):
    """The parsed arguments as a dict (missing optional ones absent); TypeError like the real binding."""
    if len(args) > len(spec):
        raise TypeError(call + "() takes at most " + str(len(spec)) + " positional arguments, got " + str(len(args)))
    names = [entry[0] for entry in spec]
    parsed = {}
    for index, value in enumerate(args):
        parsed[names[index]] = value
    for key in kwargs:
        if key not in names:
            raise TypeError(call + "() got an unexpected keyword argument '" + key + "'")
        if key in parsed:
            raise TypeError(call + "() got argument '" + key + "' twice")
        parsed[key] = kwargs[key]
    for name, kind, required in spec:
        if name not in parsed:
            if required:
                raise TypeError(call + "() missing required argument '" + name + "'")
            continue
        if not _type_ok(parsed[name], kind):
            raise TypeError(
                call + "() argument '" + name + "' must be " + _kind_name(kind) + ", not " + type(parsed[name]).__name__
            )
        if kind == "bool":
            parsed[name] = bool(parsed[name])
    return parsed


def call(name, args, kwargs, spec):
    """accept() and record() in one: what most doubled calls do first."""
    parsed = accept(name, args, kwargs, spec)
    record(name, parsed)
    return parsed
