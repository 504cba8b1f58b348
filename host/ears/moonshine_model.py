"""Moonshine's decoder, converted once into the user's cache: ~60 % of the memory, a third of the compute.

The wheel's decoder keeps every weight as int8 and turns it back into float32 (Cast, Mul, Add) on every
step, the 32768-word embedding too (also the output projection, transposed each step): ~218 MB of
temporaries per step, which grow onnxruntime's arena. onnxruntime folds those constants when it loads an
ONNX file, but not an .ort file like the wheel's. So, once: export the decoder to ONNX, mend and reshape
it (below), let onnxruntime fold it, and save what it folded as .ort in the cache (~180 MB, a few seconds).

The file's name says what it was made from (the wheel's decoder bytes, this recipe, onnxruntime's
version), so a new wheel or a new onnxruntime converts again; it is written whole under a temporary name
in the same folder and then renamed, so a conversion cut short, or two ears starting at once, never leave
a half file under that name.
"""

import contextlib
import hashlib
import logging
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from soulstack.ears.recognise import cache_root

log = logging.getLogger(__name__)

RECIPE = "1"  # raise when the rewrite below changes: the old files are then converted again
EMBED = "model.decoder.embed_tokens.weight_merged_0_"  # the int8 table's initializers: _quantized, _scale, _zero_point
FLOAT_TABLE = EMBED + "add_tensor"  # what the main graph's Cast->Mul->Add makes of the whole table


class ConversionFailed(RuntimeError):
    """The converter could not make the file: its last words say why."""


class UnexpectedGraph(ValueError):
    """The wheel's decoder is not laid out as the rewrite expects (a new wheel): better run it as it is."""


def cached_path(wheel_decoder: Path, cache: Path | None = None) -> Path:
    """Where the converted decoder for `wheel_decoder` lives, named after what it is made from."""
    import onnxruntime

    with wheel_decoder.open("rb") as source:
        made_from = hashlib.file_digest(source, "sha256")
    made_from.update(f"recipe {RECIPE} onnxruntime {onnxruntime.__version__}".encode())
    return cache_root(cache) / "moonshine-base" / f"decoder-{made_from.hexdigest()[:16]}.ort"


def converted_decoder(wheel_decoder: Path, cache: Path | None = None, again: bool = False) -> Path:
    """The converted decoder's path: found in the cache, or made there now (or anew, `again`). Raises OSError
    (a cache that cannot be written) or ConversionFailed."""
    target = cached_path(wheel_decoder, cache)
    if target.exists() and not again:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    log.info("converting Moonshine's decoder once into %s (a few seconds; ~180 MB)", target.parent)
    # A folder of its own beside the target: the export and the new file vanish with it if anything fails.
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".converting-") as work:
        convert_apart(wheel_decoder, Path(work))
        (Path(work) / "decoder.ort").replace(target)
    with contextlib.suppress(OSError):  # tidying is a courtesy: the model is there
        tidy(target.parent, target)
    return target


def tidy(folder: Path, kept: Path) -> None:
    """Drop what an older wheel or onnxruntime left (~180 MB each; two installs sharing one cache then
    convert at each start, a few seconds), and the work folders of conversions killed midway (an hour
    old: one under way now is younger)."""
    for path in folder.iterdir():
        if path.name.startswith("decoder-") and path != kept:
            path.unlink(missing_ok=True)
        elif path.name.startswith(".converting-") and time.time() - path.stat().st_mtime > 3600:
            shutil.rmtree(path, ignore_errors=True)


def convert_apart(wheel_decoder: Path, work: Path) -> None:
    """convert() in a process of its own: what onnxruntime takes to fold (~250 MB) goes back to the system
    when it ends, where in ears' own process it would stay for the process's life."""
    argv = [sys.executable, "-m", __name__, str(wheel_decoder), str(work / "plain.onnx"), str(work / "decoder.ort")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        raise ConversionFailed(said[-1] if said else f"the converter stopped with status {done.returncode}")


def convert(wheel_decoder: Path, plain: Path, folded: Path) -> None:
    """Export the wheel's .ort to ONNX at `plain` (nothing optimised), rewrite it, save it folded at `folded`."""
    import onnx
    import onnxruntime

    level = onnxruntime.GraphOptimizationLevel
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = level.ORT_DISABLE_ALL
    options.optimized_model_filepath = str(plain)
    onnxruntime.InferenceSession(str(wheel_decoder), options, providers=["CPUExecutionProvider"])
    model = onnx.load(str(plain))
    name_graphs(model.graph, "decoder")
    share_embedding(model.graph)
    # EXTENDED folds the constants and fuses what the CPU runs. ALL measured the same here (words, size,
    # speed), and onnxruntime's docs warn that its layout changes may suit only the CPU that made the file.
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = level.ORT_ENABLE_EXTENDED
    options.add_session_config_entry("session.save_model_format", "ORT")
    options.optimized_model_filepath = str(folded)
    onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    if not folded.exists():
        raise UnexpectedGraph("onnxruntime loaded the rewritten decoder but saved no file")


def name_graphs(graph, name: str) -> None:
    """Name `graph` and every graph inside it: the export leaves the If's branches nameless, and
    onnxruntime then refuses the file ("Field 'name' of 'graph' is required")."""
    graph.name = graph.name or name
    for index, node in enumerate(graph.node):
        for attribute in node.attribute:
            inner = ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs)
            for branch in inner:
                name_graphs(branch, f"{graph.name}/{node.name or index}/{attribute.name}")


def share_embedding(graph) -> None:
    """Make the embedding cheap. Each branch of the If (first step, later steps) transposes the whole float
    table for the output projection, and looks up one row of it: the Transpose moves into the main graph
    (one copy, folded once at conversion), and the lookup takes the int8 row and turns only it to float."""
    from onnx import TensorProto, helper

    initializers = {tensor.name: tensor for tensor in graph.initializer}
    for part in ("quantized", "scale", "zero_point"):
        if EMBED + part not in initializers:
            raise UnexpectedGraph(f"the decoder has no {EMBED + part}")
    for part in ("scale", "zero_point"):  # one for the whole table, so a row's is the table's
        if list(initializers[EMBED + part].dims) != [1]:
            raise UnexpectedGraph(f"{EMBED + part} is not one number")
    branching = [node for node in graph.node if node.op_type == "If"]
    if len(branching) != 1:
        raise UnexpectedGraph(f"the decoder has {len(branching)} If nodes, not one")
    transposes = []
    for attribute in branching[0].attribute:
        kept = []
        for node in attribute.g.node:
            if node.op_type == "Transpose" and list(node.input) == [FLOAT_TABLE]:
                transposes.append(node)
            elif node.op_type == "Gather" and node.input[0] == FLOAT_TABLE:
                row, name = node.output[0], node.name
                kept += [
                    helper.make_node("Gather", [EMBED + "quantized", node.input[1]], [row + "_int8"], name, axis=0),
                    helper.make_node("Cast", [row + "_int8"], [row + "_cast"], name + "_cast", to=TensorProto.FLOAT),
                    helper.make_node("Mul", [row + "_cast", EMBED + "scale"], [row + "_scaled"], name + "_mul"),
                    helper.make_node("Add", [row + "_scaled", EMBED + "zero_point"], [row], name + "_add"),
                ]
            else:
                kept.append(node)
        if any(FLOAT_TABLE in node.input for node in kept):
            raise UnexpectedGraph(f"the branch {attribute.name} uses the float embedding other than as expected")
        del attribute.g.node[:]
        attribute.g.node.extend(kept)
    if len(transposes) != 2 or transposes[0].output != transposes[1].output:
        raise UnexpectedGraph("the branches do not each transpose the embedding into one shared name")
    if transposes[0].attribute != transposes[1].attribute:
        raise UnexpectedGraph("the branches transpose the embedding differently")
    # Before the If, which reads its output from the outer scope as it read the float table's.
    graph.node.insert(list(graph.node).index(branching[0]), transposes[0])


if __name__ == "__main__":  # convert_apart's child: WHEEL_DECODER PLAIN_ONNX FOLDED_ORT
    try:
        convert(*(Path(arg) for arg in sys.argv[1:4]))
    except Exception as error:  # one line for the parent's warning, not a traceback
        print(f"{type(error).__name__}: {error}".splitlines()[0], file=sys.stderr)
        sys.exit(1)
