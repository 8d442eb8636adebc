"""The `ftgui` command headless: `ftgui train` refusals, datasets, and `ftgui checkpoints`."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import fake_checkpoint, of_kind

from ftgui import cli
from ftgui.core.checkpoints import listing
from ftgui.core.record import events
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import ConfigError, RunConfig


def ftgui(*args: str) -> subprocess.CompletedProcess:
    """Run the real command in its own process, as a user would."""
    return subprocess.run([sys.executable, "-m", "ftgui.cli", *map(str, args)],
                          capture_output=True, text=True)


def test_a_batch_the_replicas_cannot_share_is_refused_before_anything_is_written(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    result = ftgui("train", run_dir, "--strategy", "mirrored", "--replicas", "2",
                   "--batch-size", "63")
    assert result.returncode == 2
    assert result.stderr == (
        "ftgui: global_batch_size (--batch-size): 63 is not divisible by the 2 replicas of "
        "strategy mirrored\n"
    )
    assert result.stdout == ""
    assert list(run_dir.iterdir()) == []  # no config.toml, no events.jsonl, no lock


def test_a_flag_the_strategy_does_not_use_is_said_before_the_run_starts(tmp_path, capsys):
    """`--replicas 3` with one-device trained one replica without a word (a breaker's
    finding, 2026-12-04); the batch too large for the dataset then stops it before any
    process starts."""
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--strategy", "one-device", "--replicas", "3",
                     "--batch-size", "5000"]) == 2
    assert capsys.readouterr().err == (
        "ftgui: --replicas applies to strategy mirrored; one-device ignores it\n"
        "ftgui: global_batch_size: 5000 is larger than the 1438 training examples of digits\n"
    )
    assert not run_dir.exists()


@pytest.mark.parametrize("strategy, given, lines", [
    ("mirrored", {"replicas", "steps", "snapshot_every"}, []),
    ("multi-worker", {"snapshot_every", "workers"},
     ["--snapshot-every applies to strategies default, one-device or mirrored; multi-worker "
      "ignores it"]),
    ("default", {"gpus", "ps"},
     ["--gpus applies to strategies mirrored or one-device; default ignores it",
      "--ps applies to strategy parameter-server; default ignores it"]),
])
def test_ignored_flags_names_each_given_flag_the_strategy_does_not_use(strategy, given, lines):
    assert cli.ignored_flags(RunConfig(strategy=strategy), given) == lines


def test_a_dataset_file_that_does_not_exist_is_refused_before_anything_is_written(
    tmp_path, capsys
):
    run_dir = tmp_path / "run"
    missing = tmp_path / "nowhere.npz"
    assert cli.main(["train", str(run_dir), "--dataset", str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"ftgui: dataset (--dataset): file {str(missing)!r} does not exist\n"
    )
    assert not run_dir.exists()


def test_a_model_name_that_is_no_built_in_is_named_as_typed_not_as_a_path(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--model", "rnn"]) == 2
    assert capsys.readouterr().err == (
        "ftgui: model (--model): 'rnn' is not one of mlp, cnn, resnet, "
        "PATH.py:FUNCTION or FILE.keras\n")
    assert not run_dir.exists()


def test_from_step_needs_resume(tmp_path, capsys):
    assert cli.main(["train", str(tmp_path / "run"), "--from-step", "20"]) == 2
    assert capsys.readouterr().err == "ftgui: from_step: --from-step needs --resume\n"


def test_resume_needs_a_run_to_resume(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--resume"]) == 2
    assert capsys.readouterr().err == f"ftgui: run_dir: {run_dir} has no config.toml to resume\n"
    assert not run_dir.exists()


def test_a_new_run_is_not_started_over_an_existing_one(finished_run, capsys):
    before = (finished_run / "events.jsonl").read_bytes()
    assert cli.main(["train", str(finished_run), "--steps", "10"]) == 2
    assert capsys.readouterr().err == (
        f"ftgui: {finished_run.absolute()} already holds a run; resume it (--resume) "
        "or pick a new directory\n"
    )
    assert (finished_run / "events.jsonl").read_bytes() == before
    assert configmod.load(finished_run).steps == 60


def test_a_fork_from_a_step_without_a_checkpoint_lists_the_steps_that_have_one(
    finished_run, capsys
):
    before = (finished_run / "events.jsonl").read_bytes()
    assert cli.main(["train", str(finished_run), "--resume", "--from-step", "15"]) == 2
    assert capsys.readouterr().err == (
        "ftgui: from_step (--from-step): no checkpoint of step 15; valid steps: "
        "20, 30, 40, 50, 60\n"
    )
    assert (finished_run / "events.jsonl").read_bytes() == before
    assert not (finished_run / "history").exists()
    assert [c.step for c in listing.list_checkpoints(finished_run)] == [20, 30, 40, 50, 60]


def test_a_config_toml_that_is_not_utf8_is_refused_in_one_line(finished_run, capsys):
    (finished_run / "config.toml").write_bytes(b"\xff\xfe garbage\n")
    before = (finished_run / "events.jsonl").read_bytes()
    assert cli.main(["train", str(finished_run), "--resume", "--steps", "90"]) == 2
    assert capsys.readouterr().err == (f"ftgui: {finished_run / 'config.toml'}: not valid TOML "
                                       "(not UTF-8: byte 0xff at offset 0)\n")
    assert (finished_run / "events.jsonl").read_bytes() == before


def test_a_checkpoints_file_in_place_of_the_folder_is_refused_before_any_process(
        finished_run, capsys):
    shutil.rmtree(finished_run / "checkpoints")
    (finished_run / "checkpoints").write_text("x")
    before = (finished_run / "events.jsonl").read_bytes()
    assert cli.main(["train", str(finished_run), "--resume", "--steps", "90"]) == 2
    assert capsys.readouterr().err == (
        f"ftgui: run_dir: {(finished_run / 'checkpoints').absolute()} is not a folder; a run "
        "keeps its checkpoints there: move it away\n")
    assert (finished_run / "events.jsonl").read_bytes() == before


def test_a_run_folder_the_system_refuses_is_named_with_its_reason_not_an_errno(
        tmp_path, capsys):
    too_long = tmp_path / ("a" * 300)
    assert cli.main(["train", str(too_long), "--steps", "5"]) == 2
    assert capsys.readouterr().err == (
        f"ftgui: run_dir: {too_long}: File name too long (give a folder ftgui can create and "
        "write in)\n")
    assert list(tmp_path.iterdir()) == []


def test_more_gpus_than_the_machine_has_is_told_before_the_batch_size(
        tmp_path, capsys, monkeypatch):
    """`--gpus 5` on a machine without a GPU was refused for a global batch of 64 not
    divisible by 5 replicas: the missing GPUs are the cause, so they are checked first."""
    from ftgui.core.settings import devices

    monkeypatch.setattr(devices, "list_devices", lambda: [{"device_type": "CPU"}])
    assert cli.main(["train", str(tmp_path / "run"), "--steps", "20", "--gpus", "5",
                     "--quiet"]) == 2
    assert capsys.readouterr().err == (
        "ftgui: gpus (--gpus): 5 asked for, this machine has 0 (see ftgui devices); give "
        "--gpus 0 to train on the CPU\n")
    assert not (tmp_path / "run").exists()


def test_a_new_run_is_not_started_among_runs_nor_inside_one(finished_run, capsys):
    """A tester's `ftgui train .` in the folder of all their runs, and a run started in
    another's checkpoints folder, both trained: each is refused in one line, nothing written."""
    folder = finished_run.parent
    assert cli.main(["train", str(folder), "--steps", "5"]) == 2
    assert capsys.readouterr().err == (
        f"ftgui: run_dir: {folder} holds runs (finished); give a new folder for this one\n")
    inside = finished_run / "checkpoints" / "x"
    assert cli.main(["train", str(inside), "--steps", "5"]) == 2
    assert capsys.readouterr().err == (f"ftgui: run_dir: {inside} is inside the run "
                                       f"{finished_run}; give a folder of its own\n")
    assert not inside.exists() and not (folder / "config.toml").exists()


def test_a_run_folder_with_runs_further_down_or_an_empty_name_is_refused(finished_run,
                                                                          capsys):
    """A breaker's `ftgui train ""` trained in the current folder, which held a folder of runs
    (every later run was then refused as "inside the run"), and `nest/` with a run at
    `nest/deep/r` was taken as a new run's folder."""
    nest = finished_run.parent / "nest"
    shutil.copytree(finished_run, nest / "deep" / "r")
    assert cli.main(["train", str(nest), "--steps", "5"]) == 2
    assert capsys.readouterr().err == (
        f"ftgui: run_dir: {nest} holds runs (deep/r); give a new folder for this one\n")
    with pytest.raises(SystemExit) as refused:
        cli.main(["train", "", "--steps", "5"])
    assert refused.value.code == 2
    assert capsys.readouterr().err.startswith(
        "ftgui train: argument run_dir: an empty name; give the run's folder (e.g. runs/demo)")
    assert not (nest / "config.toml").exists()
    assert not (Path.cwd() / "config.toml").exists()


def test_the_signal_handlers_of_the_caller_are_given_back(finished_run):
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert cli.main(["train", str(finished_run), "--resume", "--from-step", "15"]) == 2
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


# ----------------------------------------------------------------- ftgui checkpoints


@pytest.mark.tf
def test_checkpoints_json_lists_step_loss_and_validity_of_a_real_run(
    baseline_run, baseline_losses, capsys
):
    assert cli.main(["checkpoints", str(baseline_run), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["step"], r["loss"], r["valid"], r["reason"], r["path"]) for r in rows] == [
        (step, baseline_losses[step], True, "", f"checkpoints/ckpt-{step}")
        for step in (20, 30, 40, 50, 60)
    ]
    sizes = [sum(p.stat().st_size for p in listing.tf_files(baseline_run / "checkpoints", s))
             for s in (20, 30, 40, 50, 60)]
    assert [r["size"] for r in rows] == sizes
    saved = {e["step"]: e for e in of_kind(events.read_all(baseline_run), "validation")}
    assert [(r["val_loss"], r["val_accuracy"]) for r in rows] == [
        (saved[s]["val_loss"], saved[s]["val_accuracy"]) for s in (20, 30, 40, 50, 60)
    ]
    assert rows[-1]["val_accuracy"] > 0.8  # 60 steps of Adam learn the digits


def test_checkpoints_table_marks_the_newest_valid_and_says_why_others_are_not(tmp_path, capsys):
    for step in (10, 20):
        fake_checkpoint(tmp_path, step)
    fake_checkpoint(tmp_path, 30, metadata=False)
    assert cli.main(["checkpoints", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["step", "loss", "val_loss", "time", "size", "valid"]
    assert [line.split()[0] for line in lines[1:]] == ["10", "20", "30"]
    assert lines[1].split()[1] == "0.1000" and lines[1].endswith("  yes")
    assert lines[2].endswith("  yes (newest)")
    assert lines[3].endswith("  no: no metadata: the save did not finish")


def test_checkpoints_of_a_run_without_any(tmp_path, capsys):
    configmod.save(tmp_path, RunConfig(steps=5))
    assert cli.main(["checkpoints", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "(no checkpoints)"
    assert cli.main(["checkpoints", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_checkpoints_of_a_folder_that_is_no_run_says_so(tmp_path, capsys):
    assert cli.main(["checkpoints", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"ftgui: run_dir: {tmp_path} is not a run (it has no config.toml, events.jsonl or "
        "checkpoints folder)\n")


def test_checkpoints_of_a_directory_that_does_not_exist(tmp_path, capsys):
    assert cli.main(["checkpoints", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err == f"ftgui: run_dir: {tmp_path / 'nope'} is not a directory\n"


# ----------------------------------------------------------------- a user's own .npz


def test_an_npz_without_labels_is_refused_before_anything_starts(tmp_path, capsys):
    bad = tmp_path / "no-labels.npz"
    np.savez(bad, x=np.zeros((100, 8, 8), dtype=np.float32))
    run_dir = tmp_path / "run"
    status = cli.main(["train", str(run_dir), "--dataset", str(bad), "--steps", "5",
                       "--auto-recover", "--restart-backoff", "0", "--quiet"])
    assert status == 2
    assert capsys.readouterr().err == f"ftgui: dataset: {bad} has no array 'y' (needs x and y)\n"
    assert not run_dir.exists()  # no process, no config, nothing to clean up


@pytest.mark.tf
def test_a_cnn_trains_on_a_users_npz_named_relative_to_the_current_directory(
    tmp_path, monkeypatch
):
    from sklearn.datasets import load_digits

    digits = load_digits()
    np.savez(tmp_path / "digits-uint8.npz",
             x=(digits.images * 15).astype(np.uint8), y=digits.target)
    monkeypatch.chdir(tmp_path)
    status = cli.main(["train", "run", "--dataset", "digits-uint8.npz", "--model", "cnn",
                       "--strategy", "one-device", "--steps", "3", "--quiet"])
    assert status == 0
    # config.toml names the file absolutely, so the run can be resumed from anywhere.
    assert configmod.load(tmp_path / "run").dataset == str(tmp_path / "digits-uint8.npz")
    all_events = events.read_all(tmp_path / "run")
    [started] = of_kind(all_events, "training_started")
    assert (started["strategy"], started["replicas"]) == ("one-device", 1)
    assert [e["step"] for e in of_kind(all_events, "step")] == [1, 2, 3]
    assert [c.step for c in listing.list_checkpoints(tmp_path / "run")] == [3]


@pytest.mark.tf
def test_a_checkpoint_tensorflow_cannot_read_fails_with_tensorflows_reason(finished_run, capsys):
    # The fake checkpoints have complete files and metadata, but their bytes are not TensorFlow's.
    # No restart: a resume would otherwise go on to the next newest (test_training's flipped
    # bytes test), here as fake as this one.
    assert cli.main(["train", str(finished_run), "--resume", "--steps", "80",
                     "--max-restarts", "0", "--quiet"]) == 1
    assert capsys.readouterr().err == (
        "ftgui: run failed: exited with status 4 (damaged checkpoint): checkpoint "
        "checkpoints/ckpt-60 is damaged and now marked invalid "
        "(OpError: not an sstable (bad magic number))\n"
    )
    [error] = of_kind(events.read_all(finished_run), "training_error")
    assert (error["attempt"], error["role"]) == (1, "chief")
    newest = [c for c in listing.list_checkpoints(finished_run) if c.step == 60][0]
    assert newest.reason == "damaged: OpError: not an sstable (bad magic number)"


def test_a_bad_value_in_config_toml_names_the_file_and_a_flag_mends_it(tmp_path, capsys):
    run_dir = tmp_path / "run"
    configmod.save(run_dir, RunConfig(steps=60, kill_at_step=35))
    assert cli.main(["train", str(run_dir), "--resume", "--steps", "30"]) == 2
    assert capsys.readouterr().err == (
        "ftgui: kill_at_step (--kill-at-step): 35 is not a whole number from 0 to 30 "
        f"(set in {run_dir / 'config.toml'}; give --kill-at-step to change it)\n"
    )
    text = (run_dir / "config.toml").read_text().replace("seed = 42", 'seed = "x"')
    (run_dir / "config.toml").write_text(text)
    with pytest.raises(ConfigError, match=r"^seed: 'x' is not a whole number \(in "):
        configmod.load(run_dir)
    base = configmod.load_values(run_dir)
    args = cli.build_parser().parse_args(["train", str(run_dir), "--seed", "7"])
    assert cli.config_from_args(args, base).seed == 7  # the flag mends the file's value


def test_a_boolean_is_not_a_number():
    with pytest.raises(ConfigError, match="^steps: True is not a whole number"):
        configmod.from_dict({"steps": True})


def test_abbreviated_flags_are_refused(capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", "run", "--step", "5"])
    assert "unrecognized arguments: --step 5" in capsys.readouterr().err


def test_a_value_of_the_wrong_type_gets_one_line(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["train", "run", "--lr", "abc"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "ftgui train: argument --lr: invalid float value: 'abc' (see ftgui train --help)\n")


def test_resuming_a_run_that_reached_its_last_step_says_so_before_starting(finished_run, capsys):
    before = (finished_run / "events.jsonl").read_bytes()
    assert cli.main(["train", str(finished_run), "--resume"]) == 2
    assert capsys.readouterr().err == (
        "ftgui: steps (--steps): the run already reached step 60 of 60; give --steps N with "
        "N > 60 to train on, or --from-step S to fork\n"
    )
    assert (finished_run / "events.jsonl").read_bytes() == before  # nothing started


def test_fewer_steps_than_a_run_reached_is_refused_for_that_first(finished_run, capsys):
    """A breaker's find: `--resume --steps 40` on a run at step 100 was refused for the
    kill_at_step 60 its config.toml held, which only hid the real problem."""
    config = configmod.load(finished_run)
    configmod.save(finished_run, config.replace(kill_at_step=50))
    assert cli.main(["train", str(finished_run), "--resume", "--steps", "40"]) == 2
    assert capsys.readouterr().err == (
        "ftgui: steps (--steps): the run already reached step 60, past 40; give --steps N "
        "with N > 60 to train on, or --from-step S to fork\n")


def test_fewer_steps_than_a_killed_run_logged_is_refused_too(tmp_path, capsys):
    """Killed at step 40, its newest checkpoint 25: `--resume --steps 30` trained 26-30 and
    called 15 steps redone (a breaker's find); 40 is in the events, not in a checkpoint."""
    run_dir = tmp_path / "run"
    configmod.save(run_dir, RunConfig(steps=100, checkpoint_every=25))
    with events.EventWriter(run_dir, attempt=0) as writer:
        writer.emit("run_started")
        for step in range(1, 41):
            writer.emit("step", step=step, loss=1.0 / step)
    fake_checkpoint(run_dir, 25)
    before = (run_dir / "events.jsonl").read_bytes()
    assert cli.main(["train", str(run_dir), "--resume", "--steps", "30"]) == 2
    assert capsys.readouterr().err == (
        "ftgui: steps (--steps): the run already reached step 40, past 30; give --steps N "
        "with N > 40 to train on, or --from-step S to fork\n")
    assert (run_dir / "events.jsonl").read_bytes() == before


@pytest.mark.tf
def test_sigterm_to_ftgui_train_saves_the_step_reached_and_stops(tmp_path):
    """A scheduler's SIGTERM (or Ctrl-C) preempts: the chief saves its current step, no
    automatic restart follows, nothing is left running, and the exit status says the signal."""
    import time

    from conftest import processes_of

    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ftgui", "train", str(run_dir), "--steps", "100000",
         "--checkpoint-every", "1000", "--auto-recover", "--restart-backoff", "0", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not [e for e in events.read_all(run_dir) if e["event"] == "step"
                   and e["step"] >= 20]:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    seen = events.read_all(run_dir)
    [preempted] = of_kind(seen, "preempted")
    step = preempted["step"]
    assert preempted["checkpoint"] == f"checkpoints/ckpt-{step}"
    assert max(e["step"] for e in of_kind(seen, "step")) == step  # saved the step it reached
    assert step >= 20 and listing.newest_valid(run_dir).step == step
    assert step % 1000 != 0  # saved because of the preemption, not the interval
    [exited] = of_kind(seen, "process_exited")
    assert exited["exit_code"] == 42  # exitcodes.PREEMPTED
    assert [e["attempt"] for e in of_kind(seen, "process_started")] == [0]  # no restart
    assert f"stopped by SIGTERM at step {step} (run preempted)" in err
    assert processes_of(run_dir) == []


@pytest.mark.tf
def test_sigterm_preempts_when_the_reader_of_the_output_has_gone(tmp_path):
    """`ftgui train … 2>&1 | head` after head has exited (or a dropped ssh session): the
    signal handler's line hit the closed pipe, its BrokenPipeError ended the run with SIGKILLs,
    and the step reached was lost (a new user's finding). It preempts as with a reader."""
    import time

    from conftest import processes_of

    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ftgui", "train", str(run_dir), "--steps", "100000",
         "--checkpoint-every", "1000", "--restart-backoff", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        proc.stdout.close()  # the reader is gone: every later write hits a closed pipe
        while not [e for e in events.read_all(run_dir) if e["event"] == "step"
                   and e["step"] >= 20]:
            assert proc.poll() is None
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    finally:
        proc.kill()
    seen = events.read_all(run_dir)
    [preempted] = of_kind(seen, "preempted")
    step = preempted["step"]
    assert max(e["step"] for e in of_kind(seen, "step")) == step  # saved the step it reached
    assert listing.newest_valid(run_dir).step == step and step % 1000 != 0
    assert [e["exit_code"] for e in of_kind(seen, "process_exited")] == [42]  # PREEMPTED
    assert processes_of(run_dir) == []


@pytest.mark.parametrize("deterministic, quiet, lines", [
    (True, False, ["checked: model m: 0 layers, 0 parameters; data 0 training / 0 validation "
                   "examples, input ()", cli.EXACT_PROMISED]),
    (False, True, ["checked: model m: 0 layers, 0 parameters; data 0 training / 0 validation "
                   "examples, input ()",
                   "warning: exact resume is not guaranteed for this model: dropout draws"]),
    (False, False, ["checked: model m: 0 layers, 0 parameters; data 0 training / 0 validation "
                    "examples, input ()",
                    "warning: exact resume is not guaranteed for this model: dropout draws"]),
])
def test_the_user_code_check_says_whether_an_exact_resume_is_promised(
        capsys, deterministic, quiet, lines):
    """As the README says it does: a passed check says the exact resume is promised, a
    failed one why not (a new user read only the model's summary and did not know)."""
    from ftgui.core.settings.user_code import CheckResult

    result = CheckResult({"name": "m"}, deterministic, [], "" if deterministic else "dropout draws")
    cli._show_check(result, quiet)
    assert capsys.readouterr().out.splitlines() == lines


def test_the_progress_does_not_repeat_the_determinism_warning_the_check_printed(capsys):
    """A new user saw the check's verdict for one model before "run started" and for another
    after "chief started", without `warning:`: now `_show_check` prints it, the progress not."""
    from ftgui.console import Progress

    progress = Progress()
    progress.show({"event": "determinism_warning", "time": 1.0, "attempt": 0,
                   "reason": "dropout draws", "ops": []})
    assert capsys.readouterr().out == ""


def test_the_check_promises_no_exact_resume_to_the_fit_loop(capsys):
    # its step-save-restore-step probe tries the custom loop's saves; model.fit restarts at
    # the epoch start (a new user's finding: "exact resume: promised" under --loop fit)
    from ftgui.core.settings.user_code import CheckResult

    cli._show_check(CheckResult({"name": "m"}, True, [], ""), False, "fit")
    assert capsys.readouterr().out.splitlines()[1:] == [
        "exact resume: not promised for --loop fit (model.fit's BackupAndRestore restarts at "
        "the epoch start)"]


@pytest.mark.parametrize("under", ["", "sub"])
def test_a_run_folder_that_is_a_file_gets_one_line_naming_the_file(tmp_path, capsys, under):
    afile = tmp_path / "afile"
    afile.write_text("notes")
    assert cli.main(["train", str(afile / under if under else afile), "--steps", "5"]) == 2
    assert capsys.readouterr().err == (
        f"ftgui: run_dir: {afile} is a file; give a folder (new, or a run's)\n")
    assert afile.read_text() == "notes"  # nothing written over it


@pytest.mark.parametrize("argv, line", [
    (["train", "run", "--stpes", "10"], "ftgui: unrecognized arguments: --stpes 10; did you "
     "mean --steps? (see ftgui train --help)"),
    (["devices", "--jsn"], "ftgui: unrecognized arguments: --jsn; did you mean --json? "
     "(see ftgui devices --help)"),
    (["train", "run", "--bogus", "1"], "ftgui: unrecognized arguments: --bogus 1 "
     "(see ftgui train --help)"),  # nothing close: no guess
])
def test_a_mistyped_option_gets_the_closest_and_the_command_s_help(capsys, argv, line):
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err == line + "\n"


def test_open_refuses_a_folder_that_is_not_a_run_before_any_window(tmp_path, capsys,
                                                                   monkeypatch):
    """`ftgui open` on an audit's folder opened an empty window on it without a word (a new
    user's finding); an empty folder (a run to start there) and a run still open."""
    opened = []
    monkeypatch.setattr("ftgui.qt.window.app.run_app",
                        lambda run_dir=None, present=False: opened.append(run_dir) or 0)
    audit = tmp_path / "audit"
    for name in ("reference", "kill", "preempt", "hang", "nan", "kill-in-save"):
        (audit / name).mkdir(parents=True)
        (audit / name / "events.jsonl").write_text("", encoding="utf-8")
    (audit / "audit.json").write_text("{}", encoding="utf-8")
    assert cli.main(["open", str(audit)]) == 2
    assert capsys.readouterr().err == (
        f"ftgui: run_dir: {audit} is not a run (it has no config.toml or events.jsonl); the "
        "runs inside it: hang, kill, kill-in-save, nan, …\n")
    assert cli.main(["open", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err == f"ftgui: run_dir: {tmp_path / 'missing'} is not a directory\n"
    (tmp_path / "empty").mkdir()
    assert cli.main(["open", str(tmp_path / "empty")]) == 0
    assert cli.main(["open", str(audit / "kill")]) == 0
    assert opened == [tmp_path / "empty", audit / "kill"]


def test_ctrl_c_while_a_restart_is_pending_says_nothing_is_saved(capsys):
    """Ctrl+C during a restart's wait said "saving the current step and stopping", and no
    trainer ran to save it (a breaker's finding)."""
    import signal
    from types import SimpleNamespace

    stop = cli.SignalStop(SimpleNamespace(processes=[SimpleNamespace(alive=False)]))
    try:
        stop._on_signal(signal.SIGINT, None)
    finally:
        stop.give_back()
    assert capsys.readouterr().err.strip() == (
        "ftgui: SIGINT: stopping; no process runs, the pending restart is cancelled")
    stop = cli.SignalStop(SimpleNamespace(processes=[SimpleNamespace(alive=True)]))
    try:
        stop._on_signal(signal.SIGTERM, None)
    finally:
        stop.give_back()
    assert "saving the current step and stopping" in capsys.readouterr().err
