"""`ftgui train`'s progress lines: a step line now and then, a sentence per notable event."""

from __future__ import annotations

from ftgui.console import Progress


def test_a_non_finite_loss_is_printed_as_nan(capsys):
    progress = Progress()
    progress.show({"event": "step", "step": 35, "loss": None})  # events write NaN as null
    assert capsys.readouterr().out == "step 35  loss nan\n"


def test_notable_events_are_sentences_and_steps_are_not_repeated(capsys, monkeypatch):
    clock = iter([100.0, 100.0, 100.5, 103.0, 103.0])
    monkeypatch.setattr("ftgui.console.time.time", lambda: next(clock))
    progress = Progress()
    for step in (1, 2):
        progress.show({"event": "step", "attempt": 0, "time": 1.0, "step": step, "loss": 0.5})
    progress.show({"event": "heartbeat", "attempt": 0, "time": 1.0, "role": "worker",
                   "index": 1, "step": 2})
    progress.show({"event": "checkpoint_saved", "attempt": 0, "time": 1.0, "step": 2,
                   "size": 400_000})
    progress.show({"event": "fault_injected", "attempt": 0, "time": 1.0, "kind": "kill",
                   "target": "chief", "step": 1, "source": "user"})
    progress.show({"event": "step", "attempt": 0, "time": 1.0, "step": 3, "loss": 0.25})
    progress.show({"event": "process_exited", "attempt": 0, "time": 1.0, "role": "chief",
                   "index": 0, "signal": 9, "decisive": True})
    assert capsys.readouterr().out.splitlines() == [
        "step 1  loss 0.5",  # step 2 came 0.5 s later: no line
        "checkpoint 2 saved (0.4 MB)",
        "kill of chief at step 2 (user)",
        "step 3  loss 0.25",
        "chief killed at step 3",
    ]
    assert progress.last_loss == 0.25


def test_quiet_prints_nothing_but_keeps_the_last_loss(capsys):
    progress = Progress(quiet=True)
    progress.show({"event": "step", "step": 1, "loss": 0.5})
    progress.show({"event": "run_finished", "step": 1, "loss": 0.5})
    assert capsys.readouterr().out == ""
    assert progress.last_loss == 0.5
