"""A run's report as one self-contained HTML file (no Qt, no TensorFlow, nothing fetched): the
loss plot as inline SVG, the figures and incidents, the settings of `config.toml`, the
checkpoints, and the run's name and notes. `ftgui report RUN` and Run → Export report… write it.

The file is well-formed XML as well as HTML (every element closed), so any parser reads it.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from html import escape
from pathlib import Path

from ftgui import __version__
from ftgui.core import formatting
from ftgui.core.checkpoints import listing
from ftgui.core.record import run_notes
from ftgui.core.reports.svg_plot import plot_svg
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import ConfigError
from ftgui.core.settings.schema import SETTINGS
from ftgui.core.timeline import story
from ftgui.core.timeline.model import Timeline
from ftgui.core.timeline.run_figures import RUNNING_MEAN, RunFigures, read_run

STYLE = """body{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}th,td{border:1px solid #ccc;padding:3px 8px}
th{background:#f0f0f0;text-align:left}td.n{text-align:right}p.notes{white-space:pre-wrap}"""


def default_path(run_dir: str | os.PathLike) -> Path:
    """Where a report goes by default: `RUN-report.html` beside the run folder."""
    run_dir = Path(run_dir).absolute()
    return run_dir.parent / f"{run_dir.name}-report.html"


def write_report(run_dir: str | os.PathLike, out: str | os.PathLike) -> Path:
    """Write the report of `run_dir` to `out` (atomically; a folder: `RUN-report.html` in it,
    `report_path`); returns the file written. Raises `ConfigError` when `run_dir` is not a run
    folder or `out` would overwrite a run's own file, `OSError` when `out` cannot be
    written."""
    from ftgui.core.record.runs import is_run_dir

    run_dir = Path(run_dir)
    if not run_dir.exists():
        raise ConfigError(f"run_dir: {run_dir} does not exist")
    if not run_dir.is_dir() or not is_run_dir(run_dir):
        raise ConfigError(f"run_dir: {run_dir} is not a run (no config.toml or events.jsonl)")
    out = report_path(run_dir, Path(out))
    text = build_report(run_dir)
    try:
        # a new file of a unique name (O_EXCL): a planted OUT.tmp link to a run's file was
        # written through
        handle, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    except OSError as exc:
        raise ConfigError(f"output: {out} cannot be written ({exc.strerror or exc})") from None
    try:
        os.fchmod(handle, 0o644)  # a handout: readable, as a plain new file would be
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(tmp, out)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise ConfigError(f"output: {out} cannot be written ({exc.strerror or exc})") from None
    return out


def report_path(run_dir: Path, out: Path) -> Path:
    """The file a report asked to go to `out` is written to: `out`, `out.html` when `out` has
    no suffix (a new user's `-o out` wrote a file no browser opened), or `RUN-report.html`
    in it when `out` is a folder. Raises `ConfigError` (one line, before anything is written)
    when that file lies inside a run folder (any run's: its `events.jsonl`, `config.toml`,
    checkpoints are its record, and `-o RUN/events.jsonl` replaced a run's history with HTML)
    and is not a new `.html` file or an earlier ftgui report there."""
    from ftgui.core.record.runs import is_run_dir

    out = Path(os.path.abspath(out))  # "a/../b" as b; links are followed below
    if out.is_dir():
        out = out / default_path(run_dir).name
    elif not out.suffix:
        out = out.with_name(out.name + ".html")
    for path in (out.resolve(), out):  # where a link leads first: that run is named
        holder = next((folder for folder in path.parents if is_run_dir(folder)), None)
        if holder is not None and (path.suffix.lower() != ".html" or out.suffix.lower() != ".html"
                                   or out.exists() and not _is_report(out)):
            raise ConfigError(f"output: {out} is a file of the run folder {holder}, its "
                              f"record; give a new .html file or a path outside it (default: "
                              f"{default_path(run_dir)})")
    return out


def _is_report(path: Path) -> bool:
    """Whether `path` holds a report `build_report` wrote (its title says so)."""
    try:
        with path.open("rb") as file:
            head = file.read(2048)
    except OSError:
        return False
    return head.startswith(b"<!DOCTYPE html>") and b"<title>ftgui report: " in head


def build_report(run_dir: str | os.PathLike) -> str:
    """The report of `run_dir` as an HTML document (a string)."""
    run_dir = Path(run_dir)
    notes = run_notes.load(run_dir)
    name = notes.name or run_dir.name
    timeline, figures = read_run(run_dir, name)
    body = [f"<h1>{escape(name)}</h1>",
            f"<p>Run folder <code>{escape(str(run_dir.absolute()))}</code>; "
            f"{escape(timeline.state)}{': ' + escape(timeline.reason) if timeline.reason else ''}"
            "</p>"]
    # the sentence the window's story line and `ftgui train`'s last line say
    body.append(f'<p id="story"><strong>{escape(story.story(timeline))}</strong></p>')
    if notes.notes:
        body.append(f'<p class="notes">{escape(notes.notes)}</p>')
    body += ["<h2>Training loss</h2>", plot_svg(timeline, f"training loss of {name}"),
             "<h2>What the faults cost</h2>", figures_table(figures),
             incidents_table(timeline), "<h2>Settings</h2>", settings_table(run_dir),
             "<h2>Checkpoints</h2>", checkpoints_table(run_dir)]
    made = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime())
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8"/>',
        f"<title>ftgui report: {escape(name)}</title>", f"<style>{STYLE}</style>", "</head>",
        "<body>", *body, f"<p><small>Written by ftgui {escape(__version__)} on {made}."
        "</small></p>", "</body>", "</html>", ""])


def _table(headers: list[str], rows: list[list[str]], numeric: set[int] = frozenset(),
           name: str = "") -> str:
    """An HTML table; cells are escaped; columns in `numeric` are right-aligned."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(f'<td class="n">{escape(c)}</td>' if i in numeric else
                        f"<td>{escape(c)}</td>" for i, c in enumerate(row))
        body.append(f"<tr>{cells}</tr>")
    attribute = f' id="{name}"' if name else ""
    return f"<table{attribute}><tr>{head}</tr>{''.join(body)}</table>"


def seconds(value: float | None) -> str:
    """Short measurements (detection, recovery, checkpoint and wall time) to the hundredth."""
    return formatting.seconds(value, digits=2)


def figures_table(figures: RunFigures) -> str:
    """Incidents, steps redone, time lost, checkpoint stall, wall time, goodput and the final
    loss; steps redone, time lost and goodput printed as the window and `ftgui train` print
    them, the final loss in full as `ftgui train` prints it (a new user could not check the
    one against the other), `model.fit`'s said to be the epoch's running mean."""
    shown = figures.shown()
    return _table(
        ["incidents", "steps redone", "time lost", "checkpoints", "checkpoint stall", "wall time",
         "goodput", "final loss"],
        [[str(figures.incidents), shown["steps redone"], shown["time lost"],
          str(figures.checkpoints), formatting.stall(figures.checkpoint_seconds),
          seconds(figures.wall), shown["goodput"], final_loss(figures)]],
        numeric=set(range(8)), name="figures")


def final_loss(figures: RunFigures) -> str:
    """The run's last logged loss in full (the shortest digits that give the float back), as
    `ftgui train` prints it; "—" without one."""
    loss = figures.final_loss
    if loss is None or not math.isfinite(loss):
        return "—" if loss is None else formatting.loss(loss)
    return repr(loss) + (f" ({RUNNING_MEAN})" if figures.running_mean else "")


def incidents_table(timeline: Timeline) -> str:
    """One row per incident: what, when, and what it cost."""
    if not timeline.incidents:
        return "<p>No incidents.</p>"
    rows = [[i.kind, i.target, i.source or "unplanned", str(i.step),
             "—" if i.resumed_step is None else str(i.resumed_step),
             "—" if i.steps_lost is None else str(i.steps_lost),
             story.detect_words(i),
             seconds(i.recovery_seconds),
             formatting.seconds(i.time_lost),
             story.source_words(i) or "—"] for i in timeline.incidents]
    # the words of the window's Incidents tab and story line: "steps redone", "fired by"
    return _table(["fault", "target", "fired by", "at step", "resumed from", "steps redone",
                   "detected after", "recovery", "time lost", "restored from"], rows,
                  numeric={3, 4, 5, 6, 7, 8}, name="incidents")


def settings_table(run_dir: Path) -> str:
    """Every key of `config.toml` with its value, and the setting's label where ftgui knows
    it; a setting of other strategies only (workers for a mirrored run) is left out, unless
    the strategy is not one ftgui knows (then everything shows)."""
    try:
        values = configmod.load_values(run_dir)
    except FileNotFoundError:
        return "<p>No config.toml in the run folder.</p>"
    except ConfigError as exc:
        return f"<p>{escape(str(exc))}</p>"
    rows = []
    strategy = values.get("strategy", SETTINGS["strategy"].default)
    known_strategy = strategy in SETTINGS["strategy"].choices
    for key, value in values.items():
        known = SETTINGS.get(key)
        if known_strategy and known and known.strategies and strategy not in known.strategies:
            continue
        shown = ("true" if value else "false") if isinstance(value, bool) else str(value)
        rows.append([key, known.label if known else "", shown])
    return _table(["setting", "meaning", "value"], rows, name="settings")


def checkpoints_table(run_dir: Path) -> str:
    """The checkpoints on disk (`listing.list_checkpoints`), valid or not."""
    found = listing.list_checkpoints(run_dir)
    if not found:
        return "<p>No checkpoints.</p>"
    rows = []
    for info in found:
        val_loss = info.meta.get("val_loss")
        rows.append([
            str(info.step), formatting.loss(info.loss), formatting.loss(val_loss),
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.time)),
            formatting.size(info.size),
            "yes" if info.valid else f"no: {info.reason}"])
    return _table(["step", "loss", "val loss", "time", "size", "valid"], rows,
                  numeric={0, 1, 2, 4}, name="checkpoints")
