# Sourced by the tools in this folder: make sure the repo's .venv exists and has
# soulstack installed, on a fresh machine too. Usage, from a tool:
#     . "$(dirname "$0")/venv.sh"; ensure_venv dev      # or: ensure_venv runtime
# Afterwards $python is the venv's interpreter. The caller's working directory is
# left alone, so paths a person typed keep meaning what they meant.
soulstack_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="$soulstack_root/.venv/bin/python"

ensure_venv() {
    local want="${1:-dev}" stamp
    if [ ! -x "$python" ]; then
        echo "$(basename "$0"): creating .venv (first run only)" >&2
        python3 -m venv "$soulstack_root/.venv"
    fi
    # A dev install also satisfies a runtime one; reinstall when pyproject.toml changed.
    for stamp in "$soulstack_root/.venv/.soulstack-installed" "$soulstack_root/.venv/.soulstack-installed-$want"; do
        if [ -f "$stamp" ] && [ ! "$soulstack_root/pyproject.toml" -nt "$stamp" ]; then
            return 0
        fi
    done
    echo "$(basename "$0"): installing soulstack into .venv" >&2
    if [ "$want" = dev ]; then
        "$python" -m pip install -q --disable-pip-version-check -e "$soulstack_root[dev]"
        touch "$soulstack_root/.venv/.soulstack-installed"
    else
        "$python" -m pip install -q --disable-pip-version-check -e "$soulstack_root"
        touch "$soulstack_root/.venv/.soulstack-installed-$want"
    fi
}

# Home Assistant's voice servers, as real peers for the tests and benches: wyoming-faster-whisper and
# wyoming-piper in a venv of their own (.venv-voice-peers), so the GPL piper-tts they bring is never
# importable from soulstack's own .venv. Afterwards $voice_peers is that venv's bin folder.
voice_peers="$soulstack_root/.venv-voice-peers/bin"
ensure_voice_peers() {
    local want="wyoming-faster-whisper==3.8.1 wyoming-piper==2.5.2"
    if [ -f "$voice_peers/../.installed" ] && [ "$(cat "$voice_peers/../.installed")" = "$want" ]; then
        return 0
    fi
    echo "$(basename "$0"): installing the Wyoming voice servers into .venv-voice-peers (first run only)" >&2
    python3 -m venv "$soulstack_root/.venv-voice-peers"
    # shellcheck disable=SC2086
    "$voice_peers/python" -m pip install -q --disable-pip-version-check $want
    echo "$want" >"$voice_peers/../.installed"
}
