"""The window on a run launched through Slurm: the state label and the Processes tab name the
job and its state, through one kill of a worker and its automatic recovery."""

from __future__ import annotations

import re

import pytest

from ftgui.core.settings.config import RunConfig

pytestmark = [pytest.mark.slurm, pytest.mark.tf]


def wait_for(qtbot, condition, timeout_s: float = 240.0) -> None:
    qtbot.waitUntil(condition, timeout=int(timeout_s * 1000))


def test_the_window_shows_the_slurm_job_through_a_kill_and_recovery(slurm_conf, window, qtbot,
                                                                    tmp_path):
    window.panel.run_dir_edit.setText(str(tmp_path / "run"))
    window.panel.run_dir_edit.editingFinished.emit()
    window.panel.set_config(RunConfig(
        strategy="multi-worker", workers=2, steps=120, checkpoint_every=40, kill_at_step=70,
        fault_target="worker:1", auto_recover=True, launcher="slurm"))
    window.start_button.click()
    controller = window.controller
    label = window.findChild(object, "stateLabel")
    seen = []
    wait_for(qtbot, lambda: bool(seen.extend(re.findall(r"job (\d+) RUNNING on localhost",
                                                        label.text())) or seen))
    first_job = seen[0]
    wait_for(qtbot, lambda: controller.timeline.last_step >= 10)
    rows = {row["name"]: row["pid"] for row in window.processes.model_.rows}
    assert set(rows) == {"worker:0", "worker:1"}
    assert all(re.fullmatch(rf"job {first_job} step {first_job}\.\d+", str(pid))
               for pid in rows.values()), rows
    wait_for(qtbot, lambda: controller.supervisor.state == "finished")
    assert controller.timeline.attempt == 1 and controller.timeline.last_step == 120
    wait_for(qtbot, lambda: "COMPLETED" in label.text())
    second_job = re.search(r"job (\d+) COMPLETED", label.text()).group(1)
    assert second_job != first_job and label.text().startswith("finished")
    assert "worker 1 lost (killed) at step 70" in window.log.toPlainText(), window.log.toPlainText()
    window.grab().save(str(tmp_path / "slurm-window.png"))
