# Sourced by the tools in this folder: make sure the repo's .venv exists and has
# soulstack installed, on a fresh machine too. Usage, from a tool:
#     . "$(dirname "$0")/venv.sh"; ensure_venv dev      # or: ensure_venv runtime
# Afterwards $python is the venv's interpreter. The caller's working directory is
# left alone, so paths a person typed keep meaning what they meant.
soulstack_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="$soulstack_root/.venv/bin/python"

ensure_venv() {
    local want="${1:-dev}" stamp me started spent quiet=-q target="$soulstack_root"
    me="$(basename "$0")"
    if [ ! -x "$python" ]; then
        echo "$me: creating .venv (first run only; a few seconds)" >&2
        python3 -m venv "$soulstack_root/.venv"
    fi
    # A dev install also satisfies a runtime one; reinstall when pyproject.toml changed.
    for stamp in "$soulstack_root/.venv/.soulstack-installed" "$soulstack_root/.venv/.soulstack-installed-$want"; do
        if [ -f "$stamp" ] && [ ! "$soulstack_root/pyproject.toml" -nt "$stamp" ]; then
            return 0
        fi
    done
    # One line per step, so a first run is never minutes of silence. A person at a terminal also sees
    # pip's own progress (each package, its download); a log (CI, a pipe) gets the step lines only.
    [ -t 2 ] && quiet=
    # The figures: a fresh runtime install here (2 shared cores, local wheels) took 2 min 13 s for 93 packages.
    local count="about 90 packages"
    [ "$want" = dev ] && target="$soulstack_root[dev]" && count="about 115 packages, with the dev tools"
    echo "$me: installing soulstack and the packages it needs into .venv (pyproject.toml; first run only:" \
        "$count, 2 to 3 minutes on a fresh machine, most of it onnxruntime, scikit-learn, matplotlib," \
        "CTranslate2 and the Whisper and Piper models)" >&2
    started=$SECONDS
    # pip's own lines go to stderr with ours: stdout stays the tool's.
    "$python" -m pip install ${quiet:+"$quiet"} --disable-pip-version-check -e "$target" >&2
    spent=$((SECONDS - started))
    echo "$me: installed in $((spent / 60)) min $((spent % 60)) s" >&2
    if [ "$want" = dev ]; then
        touch "$soulstack_root/.venv/.soulstack-installed"
    else
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
