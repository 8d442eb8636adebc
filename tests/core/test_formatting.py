"""One way to write sizes, durations, percentages, steps and losses (`ftgui.core.formatting`)."""

from __future__ import annotations

import math

import pytest

from ftgui.core import formatting as fmt


@pytest.mark.parametrize("value, text", [
    (0, "0 B"), (1, "1 B"), (999, "999 B"), (1000, "1.0 kB"), (1049, "1.0 kB"),
    (1050, "1.1 kB"), (61_074, "61.1 kB"), (999_949, "999.9 kB"),
    (999_950, "1.0 MB"), (999_999, "1.0 MB"), (1_000_000, "1.0 MB"), (412_000, "412.0 kB"),
    (1_500_000_000, "1.5 GB"), (10**15, "1.0 PB"), (2**63, "9.2 EB"), (10**21, "1000.0 EB"),
    (-61_074, "-61.1 kB"), (999.4, "999 B"), (999.6, "1.0 kB"), (None, "—"), (math.nan, "—"),
])
def test_a_size_is_si_with_one_decimal(value, text):
    assert fmt.size(value) == text


def test_an_exact_size_adds_the_bytes_where_rounding_hid_them():
    assert fmt.exact_size(61_074) == "61.1 kB (61,074 bytes)"
    assert fmt.exact_size(1000) == "1.0 kB (1,000 bytes)"
    assert fmt.exact_size(999) == "999 B"
    assert fmt.exact_size(0) == "0 B"
    assert fmt.exact_size(None) == "—"


def test_counts_have_separators():
    assert fmt.count(57_748) == "57,748"
    assert fmt.count(0) == "0"
    assert fmt.count(None) == "—"


@pytest.mark.parametrize("value, digits, text", [
    (7.66, 1, "7.7 s"), (0, 1, "0.0 s"), (21, 1, "21.0 s"), (0.05, 2, "0.05 s"),
    (5.319, 2, "5.32 s"), (3600.04, 1, "3600.0 s"), (-1.5, 1, "-1.5 s"), (-0.04, 1, "0.0 s"),
    (-0.004, 2, "0.00 s"), (math.nan, 1, "—"), (math.inf, 1, "—"), (-math.inf, 2, "—"),
    (None, 1, "—"),
])
def test_a_duration_is_seconds_in_tenths_or_hundredths(value, digits, text):
    assert fmt.seconds(value, digits) == text


def test_percentages_are_whole_unless_asked():
    assert fmt.percent(0.52) == "52 %"
    assert fmt.percent(1.0) == "100 %"
    assert fmt.percent(0.0) == "0 %"
    assert fmt.percent(2 / 3, digits=1) == "66.7 %"
    assert fmt.percent(None) == "—"
    assert fmt.percent(math.nan) == "—"


def test_steps_have_no_thousands_separator():
    assert fmt.steps(0) == "0 steps"
    assert fmt.steps(1) == "1 step"
    assert fmt.steps(106) == "106 steps"
    assert fmt.steps(1_000_000) == "1000000 steps"


@pytest.mark.parametrize("value, text", [
    (2.302585, "2.3026"), (2.0, "2.0000"), (1 / 230, "0.0043"), (0.001, "0.0010"),
    (0.000999, "9.990e-04"), (1e-5, "1.000e-05"), (0.0, "0.0000"), (9999.99994, "9999.9999"),
    (10_000.0, "1.000e+04"), (1.23456e30, "1.235e+30"), (-0.5, "-0.5000"),
    (math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf"), (None, "—"),
])
def test_a_loss_has_four_decimals_or_four_significant_digits(value, text):
    assert fmt.loss(value) == text


def test_one_checkpoint_reads_the_same_size_in_table_dialog_log_and_cli(qtbot, tmp_path,
                                                                       capsys):
    """The issue's checkpoint of 61,074 bytes was "61 kB" in the log, "59.6 KB" in the
    table, "57,748 bytes" (its tensors) in the dialog and 61074 in the CLI."""
    from PySide6.QtWidgets import QLabel

    from ftgui import cli
    from ftgui.core.checkpoints import listing
    from ftgui.core.record import events
    from ftgui.qt.panes.checkpoint_dialog import CheckpointDialog
    from ftgui.qt.panes.checkpoint_table import COLUMNS, CheckpointTable

    directory = listing.checkpoint_dir(tmp_path)
    directory.mkdir(parents=True)
    (directory / "ckpt-25.index").write_bytes(b"i" * 1_074)
    (directory / "ckpt-25.data-00000-of-00001").write_bytes(b"d" * 60_000)
    listing.write_metadata(directory / "ckpt-25", loss=0.5, time=1_000_000.0)
    info = listing.find(tmp_path, 25)
    assert info.valid and info.size == 61_074

    table = CheckpointTable()
    qtbot.addWidget(table)
    table.refresh(tmp_path)
    model = table.model()
    in_table = model.data(model.index(0, COLUMNS.index("size")))

    # what the trainer's `checkpoint_saved` carries: the sum of the TensorFlow files
    saved = sum(p.stat().st_size for p in listing.tf_files(directory, 25))
    in_log = events.describe({"event": "checkpoint_saved", "step": 25, "size": saved})

    # the helper's answer (`inspect_checkpoint` puts the checkpoint's `size` beside its tensors)
    result = {"step": 25, "path": info.relpath, "size": info.size,
              "variables": [{"name": "w", "shape": [14437], "dtype": "float32",
                             "bytes": 57_748}]}
    dialog = CheckpointDialog(result)
    qtbot.addWidget(dialog)
    in_dialog = dialog.findChild(QLabel, "checkpointSize")

    assert cli.main(["checkpoints", str(tmp_path)]) == 0
    in_cli = capsys.readouterr().out.splitlines()[1]

    assert in_table == "61.1 kB"
    assert in_log == "checkpoint 25 saved (61.1 kB)"
    assert in_dialog.text() == ("Files 61.1 kB (61,074 bytes) · 1 saved tensor, "
                                "57.7 kB (57,748 bytes)")
    assert "  61.1 kB  yes (newest)" in in_cli


def test_a_number_keeps_its_unit_on_its_line():
    from ftgui.core.formatting import NO_BREAK, unbroken_units

    said = "resumed: 5 steps redone, 3.6 s lost · goodput 93 %"
    assert unbroken_units(said) == (f"resumed: 5 steps redone, 3.6{NO_BREAK}s lost · goodput "
                                    f"93{NO_BREAK}%")
    assert unbroken_units("2 steps, 10 steps/s") == "2 steps, 10 steps/s"  # no unit there


def test_a_count_takes_the_noun_it_needs():
    assert fmt.counted(1, "checkpoint") == "1 checkpoint"
    assert fmt.counted(0, "checkpoint") == "0 checkpoints"
    assert fmt.counted("1", "step") == "1 step"  # a figure already shown as text
    assert fmt.counted(2, "chief process", "chief processes") == "2 chief processes"
    assert fmt.plural(1, "incident") == "incident"
    assert fmt.steps(106) == "106 steps"


@pytest.mark.parametrize(("value", "text"), [
    (0.0042, "4.2 ms"), (0.028, "28 ms"), (0.0004, "0.40 ms"), (0.0, "0 ms"), (0.25, "0.25 s"),
    (3.456, "3.46 s"), (None, "—"), (float("nan"), "—")])
def test_a_checkpoint_stall_is_never_shown_as_nothing(value, text):
    """A room read "6 checkpoints: 0.00 s stalled" beside "60 checkpoints: 0.03 s stalled"
    (the checkpoint-interval demo's comparison) as saves that cost nothing."""
    from ftgui.core.formatting import stall

    assert stall(value) == text


@pytest.mark.parametrize(("values", "texts"), [
    ([0.016, 0.22], ["0.016 s", "0.220 s"]),  # the presenter's: "16 ms" beside "0.22 s"
    ([0.0, 0.0042, None], ["0 ms", "4.2 ms", "—"]),
    ([0.0042, 0.028], ["4.2 ms", "28 ms"]),
    ([0.16, 1.5], ["0.16 s", "1.50 s"]),  # the smallest keeps two significant digits
    ([0.25, 3.456], ["0.25 s", "3.46 s"]),
    ([0.0001, 2.0], ["0.000 s", "2.000 s"]),  # at most 3 decimals
    ([0.0, 2.0], ["0.00 s", "2.00 s"]),
])
def test_a_column_of_stalls_has_one_unit(values, texts):
    from ftgui.core.formatting import stalls

    assert stalls(values) == texts


def test_the_comparison_table_gives_its_stalls_one_unit():
    from ftgui.core.timeline.run_figures import RunFigures
    from ftgui.qt.runs.compare_view import cells, headline, room_cells

    every_5 = RunFigures("every 5", 1, 2, 1.0, 44, 0.22, 20.0, 0.95, 220, 0.01)
    every_20 = RunFigures("every 20", 1, 12, 2.0, 11, 0.016, 20.0, 0.9, 220, 0.01)
    rows = [every_5, every_20]
    assert [cells(run, rows)[5] for run in rows] == ["0.220 s", "0.016 s"]
    assert [room_cells(run, rows)[3] for run in rows] == ["0.220 s", "0.016 s"]
    assert "11 checkpoints: 0.016 s stalled" in headline(every_20, rows)
    # alone, as the headline and the report say it
    assert (cells(every_5)[5], cells(every_20)[5]) == ("0.22 s", "16 ms")


def test_the_comparison_headline_gives_a_small_stall_in_milliseconds():
    from ftgui.core.timeline.run_figures import RunFigures
    from ftgui.qt.runs.compare_view import headline

    run = RunFigures("every 100", 1, 95, 3.0, 6, 0.0042, 20.0, 0.86, 600, 0.01)
    assert headline(run) == ("every 100: 95 steps redone · 3.0 s lost · 6 checkpoints: 4.2 ms "
                             "stalled · goodput 86 %")


def test_a_task_target_in_words():
    from ftgui.core import formatting

    assert [formatting.task(t) for t in ("worker:1", "ps:0", "chief")] == [
        "worker 1", "ps 0", "chief"]
