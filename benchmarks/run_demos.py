"""Run every guided demo headless, faults on schedule, and print each one's duration and result.

    python benchmarks/run_demos.py [--only KEY …] [--root DIR] [--keep]

For each demo (`ftgui.core.demos.definitions.discover`): wall seconds from its first start to its
last exit, the stages the events reached, and each claim of its file (✓ / ✗ with the figures). A
demo should end in 90 s on 2 cores. Exit status 1 when a claim fails or a stage was not reached.
The run folders go to a temporary folder (removed unless --keep) or --root.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from ftgui.core.demos import definitions, results  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="demo keys (file stems)")
    parser.add_argument("--root", type=Path, default=None, help="where the run folders go")
    parser.add_argument("--keep", action="store_true", help="keep the run folders")
    args = parser.parse_args(argv)
    found, refused = definitions.discover([definitions.BUILTIN_DIR])
    for line in refused:
        print(f"refused: {line}")
    root = args.root or Path(tempfile.mkdtemp(prefix="ftgui-demos-"))
    status = 1 if refused else 0
    rows = []
    try:
        for demo in found:
            if args.only and demo.key not in args.only:
                continue
            outcome = results.run_demo(demo, root)
            ok = "ok" if outcome.holds else "FAILED"
            rows.append((demo.title, outcome.seconds, ok))
            print(f"\n## {demo.title} ({demo.key}): {outcome.seconds:.1f} s, stages "
                  f"{outcome.stages_reached}/{outcome.stages}, {ok}", flush=True)
            print(results.summary(outcome.claims), flush=True)
            status |= 0 if outcome.holds else 1
    finally:
        if not args.keep and args.root is None:
            shutil.rmtree(root, ignore_errors=True)
    print("\n| demo | seconds | result |\n|---|---:|---|")
    for title, seconds, ok in rows:
        print(f"| {title} | {seconds:.0f} | {ok} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
