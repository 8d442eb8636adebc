"""A run's configuration: one-line errors naming the field, unknown keys, and config.toml."""

from __future__ import annotations

import pytest

from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import ConfigError, RunConfig


def error_of(config: RunConfig, **validate_args) -> str:
    with pytest.raises(ConfigError) as caught:
        config.validate(**validate_args)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_the_defaults_are_a_valid_two_replica_mirrored_run():
    config = RunConfig()
    config.validate()
    assert (config.strategy, config.num_replicas, config.global_batch_size) == ("mirrored", 2, 64)


def test_a_global_batch_that_the_replicas_cannot_share_is_refused():
    message = error_of(RunConfig(strategy="mirrored", replicas=2, global_batch_size=63))
    assert message == (
        "global_batch_size: 63 is not divisible by the 2 replicas of strategy mirrored"
    )


def test_one_device_takes_any_global_batch():
    config = RunConfig(strategy="one-device", replicas=2, global_batch_size=63)
    assert config.validate() is None  # no ConfigError
    assert (config.num_replicas, config.global_batch_size) == (1, 63)  # replicas is ignored
    assert error_of(config.replace(strategy="mirrored")) == (
        "global_batch_size: 63 is not divisible by the 2 replicas of strategy mirrored"
    )


def test_gpus_replace_logical_cpus_as_the_replica_count():
    config = RunConfig(strategy="mirrored", replicas=2, gpus=3, global_batch_size=64)
    assert config.num_replicas == 3
    assert error_of(config).startswith("global_batch_size: 64 is not divisible by the 3 replicas")


def test_an_unknown_strategy_lists_the_allowed_ones():
    assert error_of(RunConfig(strategy="horovod")) == (
        "strategy: 'horovod' is not one of "
        "default, one-device, mirrored, multi-worker, parameter-server"
    )


def test_an_unknown_model_lists_the_allowed_ones():
    assert error_of(RunConfig(model="vgg")) == ("model: 'vgg' is not one of mlp, cnn, resnet, "
                                             "PATH.py:FUNCTION or FILE.keras")


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("replicas", 0, "replicas: 0 is not a whole number from 1 to 8"),
        ("replicas", 9, "replicas: 9 is not a whole number from 1 to 8"),
        ("steps", 0, "steps: 0 is not a whole number from 1 to 100000000"),
        ("checkpoint_every", 0, "checkpoint_every: 0 is not a whole number from 1 to 100000000"),
        ("keep", 0, "keep: 0 is not a whole number from 1 to 1000"),
        ("seed", -1, "seed: -1 is not a whole number from 0 to 2147483647"),
        ("learning_rate", 0.0, "learning_rate: 0.0 is not in (0, 10]"),
        ("restart_backoff", -1.0, "restart_backoff: -1.0 is not in [0, 600] seconds"),
        ("kill_at_step", 2001, "kill_at_step: 2001 is not a whole number from 0 to 2000"),
        ("fault_target", "boss", "fault_target: 'boss' is not one of chief, worker:I, ps:I"),
    ],
)
def test_an_out_of_range_value_names_its_field_and_the_allowed_range(field, value, expected):
    assert error_of(RunConfig(**{field: value})) == expected


def test_gpus_are_bounded_by_the_gpus_present():
    assert error_of(RunConfig(gpus=2, global_batch_size=64), gpus_available=1) == (
        "gpus: 2 is not a whole number from 0 to 1"
    )


def test_multi_worker_needs_two_workers_and_divides_the_batch_among_them():
    RunConfig(strategy="multi-worker", workers=2).validate()
    assert error_of(RunConfig(strategy="multi-worker", workers=1)) == (
        "workers: multi-worker needs 2 to 8 workers"
    )
    assert error_of(RunConfig(strategy="multi-worker", workers=3, global_batch_size=64)) == (
        "global_batch_size: 64 is not divisible by the 3 replicas of strategy multi-worker"
    )
    RunConfig(strategy="parameter-server", workers=3, ps=2, global_batch_size=64).validate()


def test_a_worker_target_needs_a_strategy_with_that_worker():
    assert error_of(RunConfig(strategy="mirrored", fault_target="worker:1")) == (
        "fault_target: 'worker:1' does not exist; strategy mirrored has only chief (one process)"
    )
    assert error_of(RunConfig(strategy="multi-worker", workers=2, fault_target="worker:2")) == (
        "fault_target: 'worker:2' does not exist; strategy multi-worker has chief, "
        "worker:0 … worker:1"
    )
    cluster = RunConfig(strategy="multi-worker", workers=2)
    assert configmod.parse_target("worker:1", cluster) == ("worker", 1)
    with pytest.raises(ConfigError, match="^fault_target: 'worker:2' does not exist"):
        configmod.parse_target("worker:2", cluster)
    assert configmod.parse_target("chief") == ("chief", 0)


def test_a_dataset_must_be_digits_or_an_existing_npz(tmp_path):
    assert error_of(RunConfig(dataset="mnist")) == (
        "dataset: 'mnist' is not one of digits, synthetic, PATH.py:FUNCTION or FILE.npz"
    )
    missing = tmp_path / "nothing.npz"
    assert error_of(RunConfig(dataset=str(missing))) == (
        f"dataset: file {str(missing)!r} does not exist"
    )


def test_an_unknown_key_is_refused_and_the_known_ones_are_listed():
    with pytest.raises(ConfigError) as caught:
        configmod.from_dict({"steps": 10, "batch_size": 32})
    message = str(caught.value)
    assert message.startswith("batch_size: unknown setting; known: strategy, replicas, gpus,")
    assert "global_batch_size" in message
    with pytest.raises(ConfigError, match="^learning_rte: unknown setting"):
        RunConfig().replace(learning_rte=0.1)


def test_values_from_text_are_coerced_to_the_field_type():
    config = configmod.from_dict({"steps": "60", "learning_rate": "0.5", "auto_recover": "yes"})
    assert (config.steps, config.learning_rate, config.auto_recover) == (60, 0.5, True)
    with pytest.raises(ConfigError, match=r"^steps: 'sixty' is not a"):
        configmod.from_dict({"steps": "sixty"})
    with pytest.raises(ConfigError, match=r"^steps: 2\.5 is not a"):
        configmod.from_dict({"steps": 2.5})
    with pytest.raises(ConfigError, match=r"^auto_recover: 'maybe' is not true or false$"):
        configmod.from_dict({"auto_recover": "maybe"})


def test_a_config_survives_a_round_trip_through_config_toml(tmp_path):
    original = RunConfig(
        strategy="one-device", model="cnn", global_batch_size=48, learning_rate=0.003,
        steps=120, auto_recover=True, restart_backoff=0.25, kill_at_step=35,
        dataset=str(tmp_path / "mine.npz"),
    )
    path = configmod.save(tmp_path / "run", original)
    assert path == tmp_path / "run" / "config.toml"
    assert 'strategy = "one-device"' in path.read_text()
    assert configmod.load(tmp_path / "run") == original
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["config.toml"]


def test_a_hand_edited_config_with_a_typo_names_the_key(tmp_path):
    (tmp_path / "config.toml").write_text('strategy = "mirrored"\nstpes = 10\n')
    with pytest.raises(ConfigError, match="^stpes: unknown setting"):
        configmod.load(tmp_path)


def test_a_config_that_is_not_toml_is_refused_with_its_path(tmp_path):
    (tmp_path / "config.toml").write_text("steps = = 3\n")
    with pytest.raises(ConfigError, match="config.toml: not valid TOML"):
        configmod.load(tmp_path)


def test_a_dataset_that_cannot_train_is_refused_before_any_process(tmp_path):
    import numpy as np

    from ftgui.core.settings import datasets

    assert datasets.check(RunConfig()) == 1438  # digits: 1,797 examples, 20% for validation
    with pytest.raises(ConfigError, match="^global_batch_size: 2000 is larger than the 1438"):
        datasets.check(RunConfig(global_batch_size=2000, replicas=1))
    cases = {
        "no_y.npz": ({"x": np.zeros((10, 4))}, "has no array 'y'"),
        "float_y.npz": ({"x": np.zeros((10, 4)), "y": np.zeros(10)}, "integer class ids"),
        "text_x.npz": ({"x": np.array(["a"] * 10), "y": np.zeros(10, int)}, "x must hold numbers"),
        "short_y.npz": ({"x": np.zeros((10, 4)), "y": np.zeros(9, int)}, "one label per row"),
    }
    for name, (arrays, problem) in cases.items():
        np.savez(tmp_path / name, **arrays)
        config = RunConfig(dataset=str(tmp_path / name), global_batch_size=2)
        with pytest.raises(ConfigError, match=f"^dataset: .*{problem}"):
            datasets.check(config)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ConfigError, match="is not a readable .npz file"):
        datasets.check(RunConfig(dataset=str(tmp_path / "junk.npz"), global_batch_size=2))


def test_a_config_toml_ftgui_wrote_loads_without_importing_pydantic(tmp_path):
    """A restarting trainer reads config.toml on the recovery path: nothing there to coerce."""
    import subprocess
    import sys

    configmod.save(tmp_path, RunConfig(steps=120, learning_rate=0.003, auto_recover=True))
    code = ("import sys; from ftgui.core.settings import config; c = config.load(sys.argv[1]); "
            "print(c.steps, c.learning_rate, c.auto_recover, 'pydantic' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, check=True)
    assert done.stdout == "120 0.003 True False\n"
    (tmp_path / "config.toml").write_text('steps = "120"\n')  # hand-edited: coerced
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, check=True)
    assert done.stdout == "120 0.01 False True\n"
