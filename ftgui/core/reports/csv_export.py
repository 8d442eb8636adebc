"""A run's loss curves as CSV, read straight from `RUN/events.jsonl` (no window needed).

One file, one row per logged point, in the order the events were written:

    kind,attempt,step,wall_time,loss
    train,0,1,0.000,2.3025851249694824
    …
    validation,0,10,1.532,1.9650000333786011

- `kind`: `train` for a training step (the `step` event's loss) or `validation` for the
  validation loss measured at a checkpoint (the `validation` event's `val_loss`).
- `attempt`: 0 for the first launch, +1 per restart. Every logged row is kept, including the
  steps a crashed attempt logged past the checkpoint the next one resumed from (and steps replayed
  after a rollback); keep the last row per (kind, step) to get the curve that stands.
- `wall_time`: seconds since the run's first event, to the millisecond (the plot's wall-time axis).
- `loss`: the value as logged, written so it reads back to the same float; empty for NaN.
"""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path

import numpy as np

from ftgui.core.record.event_history import read_curves

COLUMNS = ("kind", "attempt", "step", "wall_time", "loss")


def write_curves_csv(run_dir: str | os.PathLike, out: str | os.PathLike) -> int:
    """Write the curves of `run_dir` to the CSV file `out`; returns the number of data rows.

    Raises `FileNotFoundError` when the run has no `events.jsonl` (and writes nothing).
    """
    curves = read_curves(run_dir)
    origin = curves.origin or 0.0
    rows = [("train", curves.train), ("validation", curves.validation)]
    kinds = np.concatenate([np.full(len(points), index) for index, (_, points) in enumerate(rows)])
    columns = {name: np.concatenate([getattr(points, name) for _, points in rows])
               for name in ("line", "attempt", "step", "time", "loss")}
    order = np.argsort(columns["line"], kind="stable")  # file order across both kinds
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(COLUMNS)
        for kind, attempt, step, when, loss in zip(
            kinds[order].tolist(), columns["attempt"][order].tolist(),
            columns["step"][order].tolist(), columns["time"][order].tolist(),
            columns["loss"][order].tolist(), strict=True,
        ):
            wall_time = "" if math.isnan(when) else f"{when - origin:.3f}"
            writer.writerow((rows[kind][0], attempt, step, wall_time,
                             "" if math.isnan(loss) else repr(loss)))
    os.replace(tmp, out)
    return len(order)
