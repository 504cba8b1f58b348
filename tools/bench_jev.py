"""Jev's benchmark (run it as tools/bench-jev): quality on the held-out fifth of
the shipped examples, which the local classifier never trained on, and the
latency of tagging one message (the classifier call, as the harness makes it).

Last line: jev_accuracy=<n> jev_ece=<n> tag_p99_ms=<n>
Goals: accuracy >= 0.90, ECE <= 0.05, p99 < 5 ms.
"""

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from soulstack.flock.jev.local import load_examples, local_jev, measure, split  # noqa: E402
from soulstack.flock.jev.report import format_table  # noqa: E402


def main() -> int:
    started = time.perf_counter()
    jev = local_jev()
    print(f"trained in {time.perf_counter() - started:.1f} s (scikit-learn import included)")
    train, held = split(load_examples())
    result = measure(jev.probs_many(held), [e["kind"] for e in held])
    print(f"held-out: {len(held)} examples (trained on {len(train)})")
    print(format_table(result))
    for lang in ("en", "zh"):
        part = [e for e in held if e["lang"] == lang]
        print(
            f"  {lang}: accuracy {measure(jev.probs_many(part), [e['kind'] for e in part])['accuracy']:.3f} over {len(part)}"
        )
    latencies, cpu = [], []
    for _ in range(5):  # every held-out message five times, one at a time
        for e in held:
            start, start_cpu = time.perf_counter(), time.process_time()
            jev.kind_probs(e["text"], e["author"], e["to"], e["refers_to"])
            latencies.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
    latencies.sort()
    cpu.sort()
    p50, p99 = latencies[len(latencies) // 2] * 1000, latencies[int(len(latencies) * 0.99)] * 1000
    print(
        f"tagging one message: p50 {p50:.2f} ms, p99 {p99:.2f} ms over {len(latencies)} calls "
        f"(CPU time p50 {cpu[len(cpu) // 2] * 1000:.2f} ms: on a busy machine the wall figures include waiting for a core)"
    )
    print(f"jev_accuracy={result['accuracy']:.3f} jev_ece={result['ece']:.3f} tag_p99_ms={p99:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
