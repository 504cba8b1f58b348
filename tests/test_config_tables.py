"""soulstack.config_checks' tables: one dataclass field per option gives the file's reader (camelCase
keys, the checks, "did you mean"), the typed frozen object (snake_case) and the argparse flags."""

import argparse
import dataclasses

import pytest

from soulstack.config_checks import (
    ConfigError,
    add_flags,
    boolean,
    camel,
    flag_options,
    number,
    option,
    read,
    replaced,
    section,
    spec_of,
    string,
    with_flags,
)


@dataclasses.dataclass(frozen=True)
class Loop:
    max_sleep_minutes: float = option(60, number(1), "the longest sleep", flag="--max-sleep")
    night_hours: list = option([0, 7], None, "night")


@dataclasses.dataclass(frozen=True)
class Table:
    soul_dir: str = option("soul", string(nonempty=True), "where the life lives", flag="--soul-dir")
    id: str | None = option(None, string(optional=True), "model id", key="modelId")
    quiet: bool = option(False, boolean, "say less", flag="--quiet")
    only_a_flag: int = option(3, None, "not in the file", flag="--only", in_file=False)
    loop: Loop = section(Loop)


def test_the_attributes_are_snake_case_and_the_file_keys_camel_case():
    assert camel("max_sleep_minutes") == "maxSleepMinutes" and camel("id") == "id"
    assert list(spec_of(Table)) == ["soulDir", "modelId", "quiet", "loop"]
    assert list(spec_of(Table)["loop"]) == ["maxSleepMinutes", "nightHours"]


def test_a_file_is_read_into_a_frozen_object_with_its_defaults():
    warnings: list = []
    cfg = read(Table, {"soulDir": "life", "loop": {"maxSleepMinutes": 5}}, warnings, "the test")
    assert warnings == []
    assert (cfg.soul_dir, cfg.id, cfg.quiet, cfg.only_a_flag, cfg.loop.max_sleep_minutes) == ("life", None, False, 3, 5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.soul_dir = "x"  # type: ignore[misc]
    other = read(Table, {}, [], "the test")
    assert other.loop.night_hours == [0, 7] and other.loop.night_hours is not cfg.loop.night_hours  # own copies


def test_a_wrong_value_is_one_line_naming_the_key_and_an_unknown_key_a_warning():
    with pytest.raises(ConfigError, match=r"^loop\.maxSleepMinutes must be a number >= 1, not 0$"):
        read(Table, {"loop": {"maxSleepMinutes": 0}}, [], "the test")
    warnings: list = []
    read(Table, {"loop": {"maxsleepminutes": 5}, "onlyAFlag": 1}, warnings, "the test")
    assert warnings == [
        "loop.maxsleepminutes is not a key the test knows (did you mean loop.maxSleepMinutes?); ignored",
        "onlyAFlag is not a key the test knows; ignored",  # a flag-only option has no key in the file
    ]


def test_the_flags_come_from_the_table_and_only_given_ones_change_the_config():
    parser = argparse.ArgumentParser()
    add_flags(parser, Table)
    helps = {action.option_strings[0]: action.help for action in parser._actions if action.option_strings}
    assert helps["--max-sleep"] == "the longest sleep (default 60)" and helps["--quiet"] == "say less"
    cfg = read(Table, {"soulDir": "life"}, [], "the test")
    assert with_flags(cfg, parser.parse_args([])) == cfg
    laid = with_flags(cfg, parser.parse_args(["--max-sleep", "9", "--quiet", "--only", "4"]))
    assert (laid.soul_dir, laid.loop.max_sleep_minutes, laid.quiet, laid.only_a_flag) == ("life", 9.0, True, 4)


def test_replaced_changes_a_nested_value_and_leaves_the_original():
    cfg = read(Table, {}, [], "the test")
    changed = replaced(cfg, {("loop", "max_sleep_minutes"): 2, ("quiet",): True})
    assert (changed.loop.max_sleep_minutes, changed.quiet, cfg.loop.max_sleep_minutes) == (2, True, 60)


@pytest.mark.parametrize("command", ["ears", "tts", "flock", "soul"])
def test_each_commands_flags_are_its_tables(command, monkeypatch):

    from soulstack.ears.commands import EarsSettings
    from soulstack.flock.config import FlockSettings
    from soulstack.tts.commands import TtsSettings

    from soulstack.soul.config import SoulConfig

    table = {"ears": EarsSettings, "tts": TtsSettings, "flock": FlockSettings, "soul": SoulConfig}[command]
    for meta in (meta for _, meta in flag_options(table) if meta.env):
        monkeypatch.delenv(meta.env, raising=False)
    from soulstack.cli import build_parser

    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices[command]
    flags = {flag for action in sub._actions for flag in action.option_strings}
    declared = {meta.flag for _, meta in flag_options(table)}
    assert declared <= flags
    assert flags - declared - {
        f"{flag}-file" for _, meta in flag_options(table) if meta.env for flag in [meta.flag]
    } <= {
        "-h",
        "--help",
        "--insecure-no-token",
        "--config",
        "--verbose",
        "--init",  # the soul's: it writes a starter config and exits
        "--host",  # the soul's: where it listens is its process's, not its config's
    }
    assert with_flags(table(), parser.parse_args([command])) == table()  # nothing given: the table's defaults


def test_a_file_of_null_loads_as_the_defaults_for_the_soul_as_for_the_flock(tmp_path):
    """`fill` reads null as an empty object; the soul's reader once went on to ask null for its
    persona (AttributeError), which the type checker found."""
    from soulstack.flock import config as flock_config
    from soulstack.soul import config as soul_config

    (tmp_path / "soul.config.json").write_text("null\n", encoding="utf-8")
    cfg, warnings = soul_config.load(tmp_path / "soul.config.json")
    assert (cfg.persona.language, cfg.loop.max_sleep_minutes, warnings) == ("en", 60, [])
    assert flock_config.from_dict(None) == flock_config.from_dict({})


def test_a_config_saved_with_a_byte_order_mark_loads_as_without_one(tmp_path):
    """Windows' Notepad starts a UTF-8 file with U+FEFF; Python's JSON reader refused it in its own
    words ("decode using utf-8-sig"), a fix a person editing a config cannot make."""
    from soulstack.soul import config as soul_config

    path = tmp_path / "soul.config.json"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"persona": {"name": "Mochi", "language": "zh"}}')
    cfg, warnings = soul_config.load(path)
    assert (cfg.persona.name, cfg.persona.language, warnings) == ("Mochi", "zh", [])


def test_a_folder_of_the_zone_database_is_no_time_zone(tmp_path):
    """The zone "Europe" is a folder of the zone database: ZoneInfo raised IsADirectoryError, a traceback at start."""
    from soulstack.soul import config as soul_config

    (tmp_path / "soul.config.json").write_text('{"timezone": "Europe"}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r'^timezone must be an IANA time zone such as .*, not "Europe"$'):
        soul_config.load(tmp_path / "soul.config.json")


def test_the_souls_endpoints_are_the_protocols():
    from soulstack.protocol.shapes import ENDPOINTS
    from soulstack.soul.config import Endpoints

    assert tuple(item.name for item in dataclasses.fields(Endpoints)) == tuple(ENDPOINTS)


def leaves(spec, prefix=""):
    for key, rule in spec.items():
        yield from leaves(rule, prefix + key + ".") if isinstance(rule, dict) else [prefix + key]


def documented(key_path: str, rows: list) -> str | None:
    """The docs table row that names `key_path`: whole (`loop.maxSleepMinutes`, `mcp[]`), or as the
    rest of a row that names its section (`loop.nightStartHour` / `nightEndHour`)."""
    import re

    section, _, last = key_path.rpartition(".")
    for row in rows:
        if f"`{key_path}`" in row or f"`{key_path}[]`" in row:
            return row
        if section and f"`{section}." in row and re.search(rf"[`/.]{last}[`/]", row):
            return row
    return None


@pytest.mark.parametrize("doc, table", [("docs/soul.md", "soul"), ("docs/flock-and-soul.md", "flock")])
def test_the_docs_tables_name_every_key_and_its_flag(doc, table):
    from soulstack.flock.config import FlockSettings
    from soulstack.soul.config import SoulConfig
    from tests.helpers import ROOT

    declared = {"soul": SoulConfig, "flock": FlockSettings}[table]
    rows = [line for line in (ROOT / doc).read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    missing = [key for key in leaves(spec_of(declared)) if documented(key, rows) is None]
    assert missing == [], f"{doc} has no row for {missing}"
    for path, meta in flag_options(declared):
        key = ".".join(camel(part) for part in path)
        if key in set(leaves(spec_of(declared))):
            naming = [row for row in rows if documented(key, [row])]  # the options table's row, the keys'
            assert any(f"`{meta.flag}`" in row or f"`{meta.flag} " in row for row in naming), (doc, key, meta.flag)


def test_the_docs_config_examples_load_without_a_warning():
    """Today's examples in the docs (a whole flock.config.json, parts of a soul.config.json) still load."""
    import json
    import re

    from soulstack.flock import config as flock_config
    from soulstack.soul import config as soul_config
    from tests.helpers import ROOT

    readers = {
        "soul": (soul_config, spec_of(soul_config.SoulConfig)),
        "flock": (flock_config, spec_of(flock_config.FlockSettings)),
    }
    loaded = []
    for doc in ("docs/soul.md", "docs/converse.md", "docs/metabolism.md", "docs/flock-and-soul.md"):
        for block in re.findall(r"```json\n(.*?)```", (ROOT / doc).read_text(encoding="utf-8"), re.S):
            text = block.strip()
            raw = json.loads(text if text.startswith("{") else "{" + text + "}")
            for name, (module, spec) in readers.items():
                if set(raw) <= set(spec):  # a block of this config (REMINDERS.json is no one's)
                    _, warnings = module.from_dict(raw)
                    assert warnings == [], (doc, warnings)
                    loaded.append((doc, name))
                    break
    assert ("docs/flock-and-soul.md", "flock") in loaded and ("docs/soul.md", "soul") in loaded and len(loaded) >= 6


def test_no_python_reads_a_config_by_key():
    """The soul's, the flock's, ears' and tts's configs are read by attribute (cfg.loop.max_sleep_minutes):
    a `cfg["…"]` would be a key no table declares, found only when that line runs."""
    import re

    from tests.helpers import ROOT

    folders = [ROOT / "host" / name for name in ("soul", "flock", "ears", "tts")]
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in folders
        for path in sorted(folder.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bcfg\[|\bcfg\.get\(", line)
    ]
    assert found == []
