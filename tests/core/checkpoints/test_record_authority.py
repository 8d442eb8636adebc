"""A run's record is the authority for a resume (issue 25, case 9): a setting that config.toml
lacks or cannot read comes from the run's `run_started` event and the checkpoint's metadata,
said in one line, in the CLI and in the window's supervisor; never from a default."""

from __future__ import annotations

import pytest
import tomli_w
from conftest import fake_checkpoint

from ftgui import cli
from ftgui.core.checkpoints import listing, resume_check
from ftgui.core.record import events
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import ConfigError, RunConfig
from ftgui.core.supervision.supervisor import Supervisor

FIRST = RunConfig(steps=60, checkpoint_every=10, learning_rate=0.01, global_batch_size=32,
                  replicas=4, keep=3, dataset="digits")


def _run(run_dir, first: RunConfig = FIRST, **meta):
    """A 60-step run's record without TensorFlow: its run_started event and checkpoints 40,
    60 whose metadata says the run then trained with learning rate 0.005 (set on a resume)."""
    configmod.save(run_dir, first)
    with events.EventWriter(run_dir, attempt=0) as writer:
        writer.emit("run_started", config=first.to_dict())
    for step in (40, 60):
        prefix = fake_checkpoint(run_dir, step, metadata=False)
        listing.write_metadata(prefix, loss=0.5, time=1e6 + step, **{
            "model": first.model, "dataset": first.dataset, "seed": first.seed,
            "loop": "custom", "learning_rate": 0.005,
            "global_batch_size": first.global_batch_size, **meta})
    return run_dir


def _without(run_dir, *names, **values):
    """Rewrite config.toml without `names` and with `values` (raw, as a person types them)."""
    table = {k: v for k, v in configmod.load_values(run_dir).items() if k not in names}
    (run_dir / "config.toml").write_text(tomli_w.dumps({**table, **values}))


@pytest.mark.parametrize(("name", "recorded", "source"), [
    ("steps", 60, "run_started"), ("learning_rate", 0.005, "checkpoint"),
    ("global_batch_size", 32, "checkpoint"), ("replicas", 4, "run_started"),
    ("keep", 3, "run_started"),
])
def test_a_deleted_key_comes_from_the_record_in_one_line(tmp_path, capsys, name, recorded,
                                                         source):
    run_dir = _run(tmp_path / "run")
    _without(run_dir, name)
    values = cli._resume_base(run_dir, None)
    assert values[name] == recorded  # the default would be 2000 / 0.01 / 64 / 2 / 5
    line = (f"{run_dir / 'config.toml'} lacks {name}: taken from the run's own record (the "
            f"run_started event and checkpoint ckpt-60): {name} {recorded}")
    assert capsys.readouterr().out == line + "\n"
    supervisor = Supervisor(run_dir)  # the window's path: the panel shows these settings
    assert getattr(supervisor.config, name) == recorded
    assert supervisor.config_note == line


def test_the_window_and_the_cli_say_the_same_line(tmp_path, capsys):
    run_dir = _run(tmp_path / "run")
    _without(run_dir, "steps", "keep")
    cli._resume_base(run_dir, None)
    line = (f"{run_dir / 'config.toml'} lacks steps, keep: taken from the run's own record "
            "(the run_started event and checkpoint ckpt-60): steps 60, keep 3")
    assert capsys.readouterr().out == line + "\n"
    supervisor = Supervisor(run_dir)
    assert supervisor.config.steps == 60  # the window reads the config, then shows the note
    assert supervisor.config_note == line


def test_a_flag_given_again_is_not_taken_from_the_record(tmp_path, capsys):
    run_dir = _run(tmp_path / "run")
    _without(run_dir, "steps", "keep")
    values = cli._resume_base(run_dir, None, given={"steps"})
    assert "steps" not in values and values["keep"] == 3
    assert capsys.readouterr().out.endswith("lacks keep: taken from the run's own record (the "
                                            "run_started event and checkpoint ckpt-60): "
                                            "keep 3\n")


def test_an_unreadable_value_comes_from_the_record(tmp_path):
    run_dir = _run(tmp_path / "run")
    _without(run_dir, steps="many")
    values, line = resume_check.fill_from_record(run_dir, configmod.load_values(run_dir),
                                                 listing.newest_valid(run_dir).meta)
    assert values["steps"] == 60
    assert line == (f"{run_dir / 'config.toml'} cannot read steps ('many' is not a whole "
                    "number): taken from the run's own record (the run_started event and "
                    "checkpoint ckpt-60): steps 60")


def test_a_deleted_dataset_is_the_checkpoints_not_refused_as_digits(tmp_path, capsys):
    """Regression: the default `digits` was compared with the checkpoint's file and refused
    with "this run asks for digits"."""
    import numpy as np

    data = tmp_path / "mine.npz"
    np.savez(data, x=np.zeros((20, 4), np.float32), y=np.arange(20) % 2)
    run_dir = _run(tmp_path / "run", FIRST.replace(dataset=str(data)))
    _without(run_dir, "dataset")
    config = configmod.from_dict(cli._resume_base(run_dir, None))
    assert config.dataset == str(data)
    assert capsys.readouterr().out.endswith(f"lacks dataset: taken from the run's own record "
                                            f"(the run_started event and checkpoint ckpt-60): "
                                            f"dataset {data}\n")
    restore = listing.newest_valid(run_dir)
    assert resume_check.check(run_dir, config, restore) == [
        resume_check.Change("learning_rate", 0.005, 0.01, 60)]  # no refusal
    assert Supervisor(run_dir).config.dataset == str(data)


def test_without_a_record_a_missing_key_is_refused_not_defaulted(tmp_path):
    run_dir = _run(tmp_path / "run")
    (run_dir / "events.jsonl").unlink()
    _without(run_dir, "steps")
    with pytest.raises(ConfigError) as raised:
        cli._resume_base(run_dir, None)
    assert str(raised.value) == (
        f"steps: {run_dir / 'config.toml'} lacks it and the run's own record does not say "
        "what the run trained with; write it there to resume")
    supervisor = Supervisor(run_dir)
    assert supervisor.config is None and supervisor.config_error == str(raised.value)


def test_a_complete_config_toml_is_read_as_it_is(tmp_path, capsys):
    run_dir = _run(tmp_path / "run")
    assert cli._resume_base(run_dir, None) == configmod.load_values(run_dir)
    assert capsys.readouterr().out == ""
    supervisor = Supervisor(run_dir)
    assert supervisor.config == configmod.load(run_dir) and supervisor.config_note == ""


@pytest.mark.tf
def test_a_resume_with_deleted_keys_trains_on_with_the_runs_settings(tmp_path, capsys):
    from conftest import of_kind

    run_dir = tmp_path / "c"
    assert cli.main(["train", str(run_dir), "--strategy", "default", "--steps", "20",
                     "--checkpoint-every", "10", "--batch-size", "32", "--lr", "0.005",
                     "--keep", "2", "--quiet"]) == 0
    _without(run_dir, "learning_rate", "global_batch_size", "keep")
    capsys.readouterr()
    assert cli.main(["train", str(run_dir), "--resume", "--steps", "30", "--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"{run_dir / 'config.toml'} lacks global_batch_size, learning_rate, keep: "
                      "taken from the run's own record (the run_started event and checkpoint "
                      "ckpt-20): global_batch_size 32, learning_rate 0.005, keep 2")
    assert out[-1].startswith("finished: step 30 of 30")
    config = configmod.load(run_dir)
    assert (config.global_batch_size, config.learning_rate, config.keep) == (32, 0.005, 2)
    seen = events.read_all(run_dir)
    assert of_kind(seen, "setting_changed") == []  # no "changed from 0.005 to 0.01"
    assert [c.step for c in listing.list_checkpoints(run_dir)] == [20, 30]  # keep 2


def test_a_deleted_config_toml_is_rebuilt_from_the_record(tmp_path, capsys):
    run_dir = _run(tmp_path / "run")
    (run_dir / "config.toml").unlink()
    values = cli._resume_base(run_dir, None)
    assert capsys.readouterr().out == (
        f"{run_dir / 'config.toml'} is missing; settings rebuilt from the run's own record "
        "(the run_started event and checkpoint ckpt-60)\n")
    assert configmod.from_dict(values) == FIRST.replace(learning_rate=0.005)
    (run_dir / "events.jsonl").unlink()  # no record, no config.toml: nothing to resume
    assert cli.main(["train", str(run_dir), "--resume", "--quiet"]) == 2
    assert capsys.readouterr().err == f"ftgui: run_dir: {run_dir} has no config.toml to resume\n"
