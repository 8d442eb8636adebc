"""A timeline's loss plot as plain SVG text (no Qt, no plotting library): one `<polyline>` per
segment (line of training, all in the run's one colour; a resumed one begins at the point of
the step it restored, as in the window; a fork's abandoned steps pale and dashed), validation
losses as points, redone step ranges shaded, markers as dashed vertical lines with labels that
never overlap, axes with a few round ticks (steps from 0), and a legend of what is drawn under
the plot. Used by the HTML report."""

from __future__ import annotations

import math
from html import escape

import numpy as np

from ftgui.core.timeline.axis_range import series_range
from ftgui.core.timeline.label_rows import label_rows
from ftgui.core.timeline.model import Timeline

WIDTH, HEIGHT = 900, 380  # px
MARGIN = {"left": 64, "right": 16, "top": 16, "bottom": 60}  # the bottom's last 20: the legend
MAX_POINTS = 2000  # per polyline; longer segments keep each bucket's lowest and highest loss
# The run is one curve, as in the window: every attempt in its blue (a resumed one redoes the
# same losses over the earlier one's), a fork's abandoned steps pale and dashed. One colour per
# attempt, without a legend, read as the kill's red and the resume's green markers.
CURVE_COLOUR, ABANDONED_COLOUR = "#1f77b4", "#9fb7cf"
LABEL_ROWS, LABEL_ROW_PX, CHAR_PX = 4, 14, 7.0  # marker labels: rows, their spacing, a glyph
# (4 rows: at 3 a chaos run's "resume ← 192" had no room, its table listing it)
LABEL_GAP_PX = 4  # between two marker labels in one row
MARKER_COLOURS = {"crash": "#d62728", "preemption": "#ff7f0e", "hang": "#9467bd",
                  "nan_rollback": "#8c564b", "resume": "#2ca02c", "fork": "#17becf"}
REDONE_FILL = "#ffcc80"
VALIDATION_FILL, VALIDATION_EDGE = "#ff7f0e", "#a04000"  # the window's validation points
LEGEND_GAP_PX = 24  # between two legend entries


def thin(x: np.ndarray, y: np.ndarray, limit: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most about `limit` points of (x, y) in order: per bucket of consecutive points, the
    lowest and the highest y (a spike survives thinning)."""
    if len(x) <= limit:
        return x, y
    buckets = np.array_split(np.arange(len(x)), limit // 2)
    keep = sorted({int(b[np.argmin(y[b])]) for b in buckets} | {int(b[np.argmax(y[b])])
                                                                for b in buckets})
    return x[keep], y[keep]


def tick_step(low: float, high: float, count: int = 5) -> float:
    """The round spacing (1, 2 or 5 times a power of ten) of about `count` ticks over
    [low, high] (high > low)."""
    raw = (high / 2 - low / 2) * 2 / count
    step = 10.0 ** math.floor(math.log10(raw))
    return step * next(m for m in (1, 2, 5, 10) if raw <= m * step)


def ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (about `count` of them)."""
    if not high > low:
        return [low]
    step = tick_step(low, high, count)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def tick_label(value: float, step: float) -> str:
    """`value` with enough significant digits that ticks `step` apart read differently
    (at least 3): 1e+30 and 1.05e+30, 2.5 and 2.50001."""
    if value == 0:
        return "0"
    digits = max(3, math.floor(math.log10(abs(value))) - math.floor(math.log10(step)) + 1)
    return f"{value:.{digits}g}"


def plot_svg(timeline: Timeline, title: str = "training loss") -> str:
    """The SVG element (a string) for `timeline`: x is the global step, y the training loss.
    Non-finite losses are left out of the lines (the NaN marker shows where)."""
    lines = []  # (x, y, attempt, abandoned)
    for index, segment in enumerate(timeline.segments):
        x, y = segment.series.x(), segment.series.y()
        finite = np.isfinite(y)
        x, y = thin(x[finite], y[finite])
        lead = _restored_point(timeline, index)
        if lead is not None:  # as in the window: a resume leaves no one-step gap
            x, y = np.concatenate(([lead[0]], x)), np.concatenate(([lead[1]], y))
        cut = len(x) if segment.abandoned_after is None else int(
            np.searchsorted(x, segment.abandoned_after, side="right"))
        if cut:
            lines.append((x[:cut], y[:cut], segment.attempt, False))
        if cut < len(x):  # from the fork's step on: the branch a fork left
            lines.append((x[cut - 1 if cut else 0:], y[cut - 1 if cut else 0:],
                          segment.attempt, True))
    validation = _validation_points(timeline)
    xs = [line[0] for line in lines if len(line[0])] + [
        np.array([m.step for m in timeline.markers], dtype=float), validation[0]]
    ys = [line[1] for line in lines if len(line[1])] + (
        [validation[1]] if len(validation[1]) else [])
    all_x = np.concatenate(xs) if xs else np.empty(0)
    # from step 0, as the window's plot: a new user missed the 0 tick
    x_low, x_high = (min(0.0, float(all_x.min())), float(all_x.max())) if len(all_x) \
        else (0.0, 1.0)
    if x_high <= x_low:
        x_high = x_low + 1
    # constant, huge, tiny or one point: a range with distinct ticks
    # (ftgui.core.timeline.axis_range)
    y_low, y_high = series_range(ys) or (0.0, 1.0)
    left, top = MARGIN["left"], MARGIN["top"]
    right, bottom = WIDTH - MARGIN["right"], HEIGHT - MARGIN["bottom"]

    def sx(value):
        return left + (np.asarray(value, dtype=float) - x_low) / (x_high - x_low) * (right - left)

    def sy(value):  # halves: no overflow for a range near the float maximum
        share = (np.asarray(value, dtype=float) / 2 - y_low / 2) / (y_high / 2 - y_low / 2)
        return bottom - share * (bottom - top)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}" '
             'font-family="sans-serif" font-size="12">',
             f"<title>{escape(title)}</title>"]
    for redone in timeline.redone:
        x0, x1 = float(sx(redone.start)), float(sx(redone.end))
        parts.append(f'<rect class="redone" x="{x0:.1f}" y="{top}" width="{x1 - x0:.1f}" '
                     f'height="{bottom - top}" fill="{REDONE_FILL}" fill-opacity="0.5">'
                     f"<title>{_steps_of(redone.start + 1, redone.end)} redone "
                     f"({escape(redone.cause)})</title></rect>")
    parts += _axes(sx, sy, (x_low, x_high), (y_low, y_high), (left, top, right, bottom))
    for x, y, attempt, abandoned in lines:
        points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(sx(x).tolist(), sy(y).tolist(),
                                                            strict=True))
        look = (f'class="abandoned" stroke="{ABANDONED_COLOUR}" stroke-dasharray="5 3"'
                if abandoned else f'class="segment" stroke="{CURVE_COLOUR}"')
        title = f"attempt {attempt}" + (", abandoned by a fork" if abandoned else "")
        parts.append(f'<polyline {look} fill="none" stroke-width="1.5" points="{points}">'
                     f"<title>{title}</title></polyline>")
    for x, y in zip(sx(validation[0]).tolist(), sy(validation[1]).tolist(), strict=True):
        parts.append(f'<circle class="validation" cx="{x:.1f}" cy="{y:.1f}" r="4" '
                     f'fill="{VALIDATION_FILL}" stroke="{VALIDATION_EDGE}"/>')
    # a label starts 3 px right of its line; LABEL_GAP_PX keeps neighbours in a row apart
    starts = [float(sx(marker.step)) + 3 for marker in timeline.markers]
    rows = label_rows([(start, start + CHAR_PX * len(marker.label) + LABEL_GAP_PX)
                       for start, marker in zip(starts, timeline.markers, strict=True)],
                      LABEL_ROWS)
    at_step: dict[int, int] = {}  # markers at one step take turns along one line (a kill and
    # its resume: the resume's green dashes covered the kill's red, under a red label)
    for marker in timeline.markers:
        at_step[marker.step] = at_step.get(marker.step, 0) + 1
    turn: dict[int, int] = {}
    for marker, row in zip(timeline.markers, rows, strict=True):
        x = float(sx(marker.step))
        colour = MARKER_COLOURS.get(marker.kind, "#555555")
        sharing, slot = at_step[marker.step], turn.get(marker.step, 0)
        turn[marker.step] = slot + 1
        parts.append(f'<line class="marker" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" '
                     f'y2="{bottom}" stroke="{colour}" stroke-dasharray="4 {7 * sharing - 4}" '
                     f'stroke-dashoffset="{-7 * slot}">'
                     f"<title>{escape(marker.label)}</title></line>")
        if row is not None:
            parts.append(f'<text class="marker-label" x="{x + 3:.1f}" '
                         f'y="{top + 12 + LABEL_ROW_PX * row}" fill="{colour}">'
                         f"{escape(marker.label)}</text>")
    parts += _legend(timeline, lines, len(validation[0]) > 0, left, HEIGHT - 6)
    parts.append("</svg>")
    return "\n".join(parts)


def _validation_points(timeline: Timeline) -> tuple[np.ndarray, np.ndarray]:
    """(steps, losses) of the run's finite validation losses."""
    x, y = timeline.validation.x(), timeline.validation.y()
    finite = np.isfinite(y)
    return x[finite].astype(float), y[finite].astype(float)


def _legend(timeline: Timeline, lines: list, validation: bool, left: float,
            baseline: float) -> list[str]:
    """One row naming what the plot draws, from `left` at `baseline` (px): the training loss,
    a fork's abandoned steps, the validation points and the redone ranges where there are
    some (the markers' labels name themselves)."""
    entries = []  # (sample's SVG at x 0..18 around the baseline, text)
    if any(not abandoned for *_, abandoned in lines):
        entries.append((f'<line x1="0" y1="-4" x2="18" y2="-4" stroke="{CURVE_COLOUR}" '
                        'stroke-width="1.5"/>', "training loss"))
    if any(abandoned for *_, abandoned in lines):
        entries.append((f'<line x1="0" y1="-4" x2="18" y2="-4" stroke="{ABANDONED_COLOUR}" '
                        'stroke-width="1.5" stroke-dasharray="5 3"/>', "abandoned by a fork"))
    if validation:
        entries.append((f'<circle cx="9" cy="-4" r="4" fill="{VALIDATION_FILL}" '
                        f'stroke="{VALIDATION_EDGE}"/>', "validation loss"))
    if timeline.redone:
        entries.append((f'<rect x="0" y="-10" width="18" height="12" fill="{REDONE_FILL}" '
                        'fill-opacity="0.5"/>', "steps redone"))
    parts, x = [], left
    for sample, text in entries:
        parts.append(f'<g class="legend" transform="translate({x:.0f} {baseline:.0f})">'
                     f'{sample}<text x="24" y="0">{escape(text)}</text></g>')
        x += 24 + CHAR_PX * len(text) + LEGEND_GAP_PX
    return parts


def _restored_point(timeline: Timeline, index: int) -> tuple[float, float] | None:
    """(step, loss) where segment `index` began: the finite point of the newest earlier
    segment at the step before its first one (the state it restored), None when no earlier
    segment has one there (a fresh start, or a restore the curve never logged)."""
    steps = timeline.segments[index].series.x()
    if not len(steps):
        return None
    restored = steps[0] - 1
    for earlier in reversed(timeline.segments[:index]):
        at = earlier.series.index_of(restored)
        if at is not None:
            loss = float(earlier.series.y()[at])
            return (float(restored), loss) if np.isfinite(loss) else None
    return None


def _axes(sx, sy, x_range, y_range, box) -> list[str]:
    left, top, right, bottom = box
    parts = [f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#333"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#333"/>']
    for value in ticks(*x_range):
        x = float(sx(value))
        parts.append(f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">'
                     f"{value:g}</text>")
    step = tick_step(*y_range)
    for value in ticks(*y_range):
        y = float(sy(value))
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">'
                     f"{tick_label(value, step)}</text>")
    parts.append(f'<text x="{(left + right) / 2:.0f}" y="{bottom + 34}" '
                 'text-anchor="middle">global step</text>')
    parts.append(f'<text x="14" y="{(top + bottom) / 2:.0f}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {(top + bottom) / 2:.0f})">loss</text>')
    return parts


def _steps_of(first: int, last: int) -> str:
    """"step 50" or "steps 41–50": a range of global steps in words."""
    return f"step {first}" if first == last else f"steps {first}–{last}"
