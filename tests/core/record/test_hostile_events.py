"""A hand-edited events.jsonl (issue 25, found while trying to break it): a line whose fields
have other types than ftgui writes is skipped by every reader, as a torn line is, so the report
(and the window, which reads through the same timeline) shows the run as it was."""

from __future__ import annotations

import pytest
from recorded import crash_and_recovery

from ftgui import cli
from ftgui.core.record import events

HOSTILE_LINES = [
    # each crashed `ftgui report` with a traceback before (ValueError / TypeError)
    '{"event":"validation","time":1.0,"attempt":0,"step":"x","val_loss":"bad"}',
    '{"event":"run_started","time":1.0,"attempt":0,"config":"haha"}',
    '{"event":"fault_injected","time":1.0,"attempt":0,"step":3,"kind":{"a":1},"target":"chief"}',
    # and their relatives
    '{"event":"validation","time":1.0,"attempt":0,"step":null,"val_loss":0.5}',
    '{"event":"checkpoint_saved","time":1.0,"attempt":0,"step":"10","size":"big"}',
    '{"event":"process_exited","time":1.0,"attempt":0,"role":5,"index":"a","pid":"p"}',
    '{"event":"resumed","time":1.0,"attempt":1,"from_step":"z","source":7}',
    '{"event":"fault_injected","time":1.0,"attempt":0,"step":-99999999999999999999999}',
    '[' * 100000 + ']' * 100000,  # deeper than json's recursion limit
]


@pytest.mark.parametrize("hostile", HOSTILE_LINES, ids=range(len(HOSTILE_LINES)))
def test_a_hostile_line_is_skipped_and_the_report_is_written(tmp_path, hostile, capsys):
    run_dir = crash_and_recovery(tmp_path / "run")
    before = events.read_all(run_dir)
    lines = (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lines.insert(len(lines) // 2, hostile + "\n")
    (run_dir / "events.jsonl").write_text("".join(lines), encoding="utf-8")
    assert events.parse_line(hostile.encode()) is None
    assert events.read_all(run_dir) == before
    assert cli.main(["report", str(run_dir)]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 'run-report.html'}\n"


def test_the_lines_ftgui_writes_are_still_read():
    for line in ('{"event":"validation","time":1.0,"attempt":0,"step":10,"val_loss":0.5,'
                 '"val_accuracy":null}',
                 '{"event":"process_started","time":1.0,"attempt":0,"role":"chief","index":0,'
                 '"pid":7,"address":null,"restore":null,"standby_age":null}',
                 '{"event":"run_started","time":1.0,"attempt":0,"config":{"steps":60}}'):
        assert events.parse_line(line.encode()) is not None
