"""What a trainer's `import tensorflow, keras` costs, in CPU and wall seconds, and what ftgui's
`ftgui.training.imports.import_tensorflow` saves.

    python benchmarks/bench_import.py [--reps 5]

Every trainer, standby and helper process imports TensorFlow and Keras; the test suite starts
about 300 of them on 2 cores (`suite_cpu.py`), so their CPU is its time. Each variant is a fresh
process under `/usr/bin/time -v`, interleaved:
  plain      `import ftgui.training, keras, tensorflow` (how trainers imported before 2026-12-06)
  paused     `import_tensorflow()`: the same with the cyclic garbage collector paused, then frozen
  numpy      `import numpy` alone (the baseline of the next one)
  ml_dtypes  `import numpy, ml_dtypes` (TensorFlow imports it; its version is printed: 0.7.0
             registers its NumPy ufunc loops for about 1 s of CPU, 0.6.0 in 0.01 s)
Figures: median CPU (user + sys) and wall of each, and the CPU saved by `paused` against `plain`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import PYTHON, Table, header, interleaved, median, spread, timed  # noqa: E402

CODE = {
    "plain": "import ftgui.training, keras, tensorflow",
    "paused": "from ftgui.training.imports import import_tensorflow; import_tensorflow()",
    "numpy": "import numpy",
    "ml_dtypes": "import numpy, ml_dtypes",
}


def run(name: str, rep: int) -> dict:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    figures = timed([PYTHON, "-c", CODE[name]], env=env)
    if figures.get("exit"):
        raise RuntimeError(f"exit status {figures['exit']}")
    figures["cpu"] = figures["user"] + figures["sys"]
    return figures


def show(rep: int, name: str, result: dict) -> None:
    print(f"   rep {rep} {name:9s} cpu {result['cpu']:.2f} s  wall {result['wall']:.2f} s  "
          f"other load {result['foreign_cores']:.2f} cores", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--budget", type=float, default=240, help="seconds before no new rep")
    args = parser.parse_args()
    header("bench_import: a trainer's TensorFlow + Keras import")
    from importlib.metadata import version
    print(f"   numpy {version('numpy')}, ml_dtypes {version('ml_dtypes')}, "
          f"keras {version('keras')}")
    results = interleaved(list(CODE), args.reps, args.budget, run, show)
    cpu = {name: median([r["cpu"] for r in rows]) for name, rows in results.items()}
    wall = {name: median([r["wall"] for r in rows]) for name, rows in results.items()}
    print()
    for name, rows in results.items():
        print(f"   {name:9s} cpu median {cpu[name]:.2f} s ({spread([r['cpu'] for r in rows])}), "
              f"wall median {wall[name]:.2f} s")
    table = Table("bench_import")
    table.add("plain import, CPU", f"{cpu['plain']:.2f} s")
    table.add("import_tensorflow(), CPU", f"{cpu['paused']:.2f} s")
    table.add("CPU saved per process", f"{cpu['plain'] - cpu['paused']:.2f} s", "> 0",
              cpu["plain"] > cpu["paused"])
    table.add(f"ml_dtypes {version('ml_dtypes')} import, CPU",
              f"{cpu['ml_dtypes'] - cpu['numpy']:.2f} s")
    table.print()


if __name__ == "__main__":
    main()
