"""Rows for labels along an axis that must not overlap: the plot's marker labels in the window
(`ftgui.qt.plot.focus.layout_marker_labels`) and in the report's SVG
(`ftgui.core.reports.svg_plot`). Pure arithmetic on pixel spans, no Qt."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def label_rows(extents: Sequence[tuple[float, float]], rows: int,
               limits: Sequence[float] = (), before: Sequence[int | None] = (),
               first: Sequence[int] | None = None) -> list[int | None]:
    """A row (0 = top) for each label spanning pixels (left, right), such that labels in one
    row never overlap (touching is allowed: a crash's label ends where a resume's starts, left
    and right of one line). Labels are placed in the order `first` (indices; default left to
    right), each in the row it had `before` (same order as `extents`; None or past the list:
    none) if it still fits there, else in the first row where it fits: overlapping no label
    placed before it and within that row's limit (`limits[row]`, the right edge a label may
    reach there, e.g. the legend's left edge; none past the list). A label that fits in none
    of the `rows` rows gets None (not shown). Kept rows stop labels trading places as the view
    widens under a live run; placing the newest first keeps the fault being talked about
    labelled when the rows are full."""
    taken: list[list[tuple[float, float]]] = [[] for _ in range(rows)]
    placed: list[int | None] = [None] * len(extents)
    order = first if first is not None else sorted(range(len(extents)),
                                                   key=lambda k: extents[k][0])
    kept_rows = [before[k] if k < len(before) and before[k] is not None
                 and 0 <= before[k] < rows else None for k in range(len(extents))]

    def fits(k: int, row: int, spans) -> bool:
        left, right = extents[k]
        limit = limits[row] if row < len(limits) else np.inf
        return right <= limit and all(b <= left or right <= a for a, b in spans)

    for k in order:
        # rows that labels not placed yet still hold (their kept rows): a new label takes a
        # free row before it takes one of those
        held = [[extents[j] for j in order if placed[j] is None and j != k
                 and kept_rows[j] == row] for row in range(rows)]
        tries = [kept_rows[k]] if kept_rows[k] is not None else []
        tries += [row for row in range(rows) if fits(k, row, held[row])]
        tries += list(range(rows))
        row = next((r for r in tries if fits(k, r, taken[r])), None)
        if row is not None:
            taken[row].append(extents[k])
            placed[k] = row
    return placed
