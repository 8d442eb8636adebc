"""The settings schema: one declaration per setting gives its default, its check, its
`ftgui train` flag, its panel row and what a resume may do with it."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import pytest

from ftgui import cli
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import ConfigError, RunConfig
from ftgui.core.settings.schema import GROUPS, ON_RESUME, SETTINGS, WIDGETS

DEFAULTS = {
    "strategy": "mirrored", "replicas": 2, "gpus": 0, "workers": 2, "ps": 1, "cluster": "",
    "model": "mlp", "task": "classification", "loop": "custom", "dataset": "digits",
    "global_batch_size": 64,
    "learning_rate": 0.01, "steps": 2000, "checkpoint_every": 100, "keep": 5, "seed": 42,
    "pace": 0.0, "auto_recover": False, "max_restarts": 3, "restart_backoff": 1.0,
    "warm_standby": False, "standbys_per_task": 1, "max_standbys": 13,
    "snapshot_every": 1,
    "kill_at_step": 0, "preempt_at_step": 0, "nan_at_step": 0, "hang_at_step": 0,
    "kill_in_save_at_step": 0, "kill_in_snapshot_at_step": 0,
    "kill_after_seconds": 0.0, "watchdog_seconds": 0.0, "chaos_faults": 0,
    "chaos_kinds": "kill,preempt,nan", "chaos_seed": 0, "fault_target": "chief",
    "launcher": "local", "slurm_partition": "", "slurm_nodes": 1, "slurm_tasks_per_node": 0,
    "slurm_time_limit": 0, "slurm_options": "",
}


def every_setting_changed(tmp_path) -> list[RunConfig]:
    """Two valid configs that, between them, give every setting a value other than its
    default (the fit loop takes no other faults, so it gets a config of its own)."""
    dataset = tmp_path / "mine.npz"
    dataset.write_bytes(b"")  # validate() only asks that the file exists
    many = RunConfig(
        strategy="parameter-server", replicas=4, gpus=1, workers=3, ps=2,
        cluster="chief=localhost:0;worker=localhost:0,localhost:0,gpu-box:2222;"
        "ps=localhost:0,localhost:0",
        model="cnn", dataset=str(dataset), global_batch_size=96, learning_rate=0.003,
        steps=500, checkpoint_every=25, keep=7, seed=7, pace=12.5, auto_recover=True,
        max_restarts=5,
        restart_backoff=0.25, warm_standby=True, standbys_per_task=2, max_standbys=3,
        snapshot_every=3,
        kill_at_step=100, preempt_at_step=200,
        nan_at_step=300, hang_at_step=400, kill_after_seconds=30.5, watchdog_seconds=12.5,
        chaos_faults=2, chaos_kinds="kill,hang", chaos_seed=9, fault_target="ps:1",
    )
    fit = RunConfig(loop="fit", strategy="one-device")
    module = tmp_path / "net.py"
    module.write_text("def build(input_shape, num_classes): pass\n")
    regression = RunConfig(task="regression", model=f"{module}:build", dataset=str(dataset),
                           kill_in_save_at_step=200, kill_in_snapshot_at_step=30)
    slurm = RunConfig(strategy="multi-worker", workers=4, launcher="slurm",
                      slurm_partition="gpu", slurm_nodes=2, slurm_tasks_per_node=2,
                      slurm_time_limit=30, slurm_options="--account=ml --qos=high")
    configs = [many, fit, regression, slurm]
    for config in configs:
        config.validate()
    changed = {name for name in SETTINGS
               if any(getattr(c, name) != DEFAULTS[name] for c in configs)}
    assert changed == set(SETTINGS)
    return configs


def test_each_setting_keeps_its_default():
    assert {name: setting.default for name, setting in SETTINGS.items()} == DEFAULTS
    assert RunConfig().to_dict() == DEFAULTS
    assert list(RunConfig().to_dict()) == list(SETTINGS)  # config.toml keeps schema order


def test_every_setting_has_a_flag_a_panel_widget_and_help_text(qtbot, capsys):
    from PySide6.QtWidgets import QGroupBox, QWidget

    from ftgui.qt.panes.config_panel import ConfigPanel

    panel = ConfigPanel()
    qtbot.addWidget(panel)
    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    for name, setting in SETTINGS.items():
        assert setting.help and setting.label, name
        assert cli.FIELD_FLAGS[name] == setting.flag and setting.flag in help_text, name
        assert " ".join(setting.describe().split()) in help_text, name
        widget = panel.findChild(QWidget, setting.object_name)
        assert widget is panel.widgets[name], name
        assert widget.toolTip() == setting.describe(), name
        group = widget.parent()
        while not isinstance(group, QGroupBox):
            group = group.parent()
        assert group.title() == GROUPS[setting.group], name
        assert setting.on_resume in ON_RESUME and setting.widget_kind in WIDGETS, name


def test_tooltips_give_the_unit_and_the_default():
    assert SETTINGS["global_batch_size"].describe() == (
        "Global batch size: examples per step over all replicas (examples; default 64)"
    )
    assert SETTINGS["kill_at_step"].describe() == (
        "Crash (SIGKILL) the fault target right after this step (step; default off)"
    )
    assert SETTINGS["restart_backoff"].describe() == (
        "Wait before the first automatic restart, doubling each time (seconds; default 1.0)"
    )
    assert SETTINGS["warm_standby"].describe().endswith("(default off)")
    assert SETTINGS["cluster"].describe().endswith("(default none)")


def test_every_setting_can_be_given_as_a_flag(tmp_path):
    for config in every_setting_changed(tmp_path):
        argv = ["train", str(tmp_path / "run")]
        for name, setting in SETTINGS.items():
            value = getattr(config, name)
            if setting.kind is bool:
                argv.append(setting.flag if value else "--no-" + setting.flag[2:])
            else:
                argv += [setting.flag, str(value)]
        args = cli.build_parser().parse_args(argv)
        assert cli.config_from_args(args, RunConfig()) == config


def test_the_panel_shows_and_returns_every_setting(qtbot, tmp_path):
    from ftgui.qt.panes.config_panel import ConfigPanel

    panel = ConfigPanel()
    qtbot.addWidget(panel)
    # the window's defaults are the CLI's, with a warm standby (one more process per task)
    assert panel.config() == RunConfig(warm_standby=True)
    for config in every_setting_changed(tmp_path):
        panel.set_config(config)
        assert panel.config() == config
    assert panel.findChild(object, "warmStandbyCheck").isChecked() is False  # fit config
    panel.set_config(RunConfig(warm_standby=True, restart_backoff=0.5))
    assert panel.findChild(object, "warmStandbyCheck").isChecked()
    assert panel.findChild(object, "restartBackoffSpin").value() == 0.5


def test_on_resume_says_which_settings_a_resume_may_change():
    by_rule = {rule: {n for n, s in SETTINGS.items() if s.on_resume == rule} for rule in ON_RESUME}
    assert by_rule["applies"] == {"learning_rate", "global_batch_size"}
    assert by_rule["refused"] == {"model", "task", "dataset", "seed", "loop"}
    assert by_rule["free"] == set(SETTINGS) - by_rule["applies"] - by_rule["refused"]
    assert {"steps", "checkpoint_every", "keep", "warm_standby", "strategy", "replicas",
            "workers", "auto_recover", "kill_at_step"} <= by_rule["free"]


WRONG_TYPE = {int: ("ten", "a whole number"), float: ("fast", "a number"),
              bool: ("maybe", "true or false"), str: (5, "text")}


@pytest.mark.parametrize("name", list(SETTINGS))
def test_a_value_of_the_wrong_type_names_the_setting(name):
    value, what = WRONG_TYPE[SETTINGS[name].kind]
    with pytest.raises(ConfigError) as caught:
        configmod.from_dict({name: value})
    assert str(caught.value) == f"{name}: {value!r} is not {what}"


BAD_VALUES = [
    ("strategy", "horovod",
     "strategy: 'horovod' is not one of default, one-device, mirrored, multi-worker, "
     "parameter-server"),
    ("replicas", 9, "replicas: 9 is not a whole number from 1 to 8"),
    ("gpus", 65, "gpus: 65 is not a whole number from 0 to 64"),
    ("workers", 0, "workers: 0 is not a whole number from 1 to 8"),
    ("ps", 5, "ps: 5 is not a whole number from 1 to 4"),
    ("cluster", "nowhere", "cluster: 'nowhere' is not chief|worker|ps=host:port,…"),
    ("model", "vgg", "model: 'vgg' is not one of mlp, cnn, resnet, PATH.py:FUNCTION or FILE.keras"),
    ("task", "ranking", "task: 'ranking' is not one of classification, regression"),
    ("loop", "keras", "loop: 'keras' is not one of custom, fit"),
    ("dataset", "mnist",
     "dataset: 'mnist' is not one of digits, synthetic, PATH.py:FUNCTION or FILE.npz"),
    ("global_batch_size", 0, "global_batch_size: 0 is not a whole number from 1 to 1000000"),
    ("learning_rate", 10.5, "learning_rate: 10.5 is not in (0, 10]"),
    ("steps", 100_000_001, "steps: 100000001 is not a whole number from 1 to 100000000"),
    ("checkpoint_every", 0, "checkpoint_every: 0 is not a whole number from 1 to 100000000"),
    ("keep", 1001, "keep: 1001 is not a whole number from 1 to 1000"),
    ("seed", 2**31, "seed: 2147483648 is not a whole number from 0 to 2147483647"),
    ("pace", -1.0, "pace: -1.0 is not in [0, 10000]"),
    ("auto_recover", "yes", "auto_recover: 'yes' is not true or false"),
    ("max_restarts", -1, "max_restarts: -1 is not a whole number from 0 to 1000"),
    ("restart_backoff", 601.0, "restart_backoff: 601.0 is not in [0, 600] seconds"),
    ("warm_standby", 1, "warm_standby: 1 is not true or false"),
    ("standbys_per_task", 0, "standbys_per_task: 0 is not a whole number from 1 to 4"),
    ("max_standbys", -1, "max_standbys: -1 is not a whole number from 0 to 13"),
    ("snapshot_every", -1, "snapshot_every: -1 is not a whole number from 0 to 100000000"),
    ("kill_at_step", -1, "kill_at_step: -1 is not a whole number from 0 to 100000000"),
    ("preempt_at_step", 2001, "preempt_at_step: 2001 is not a whole number from 0 to 2000"),
    ("nan_at_step", 2.5, "nan_at_step: 2.5 is not a whole number from 0 to 100000000"),
    ("hang_at_step", -3, "hang_at_step: -3 is not a whole number from 0 to 100000000"),
    ("kill_in_save_at_step", -1,
     "kill_in_save_at_step: -1 is not a whole number from 0 to 100000000"),
    ("kill_in_snapshot_at_step", 2001,
     "kill_in_snapshot_at_step: 2001 is not a whole number from 0 to 2000"),
    ("kill_after_seconds", 86401.0,
     "kill_after_seconds: 86401.0 is not in [0, 86400] seconds"),
    ("watchdog_seconds", -0.5, "watchdog_seconds: -0.5 is not in [0, 86400] seconds"),
    ("chaos_faults", 1001, "chaos_faults: 1001 is not a whole number from 0 to 1000"),
    ("chaos_kinds", "kill,boom", "chaos_kinds: 'boom' is not one of kill, preempt, nan, hang"),
    ("chaos_seed", -1, "chaos_seed: -1 is not a whole number from 0 to 2147483647"),
    ("fault_target", "boss", "fault_target: 'boss' is not one of chief, worker:I, ps:I"),
    ("launcher", "k8s", "launcher: 'k8s' is not one of local, slurm"),
    ("slurm_partition", 3, "slurm_partition: 3 is not text"),
    ("slurm_nodes", 0, "slurm_nodes: 0 is not a whole number from 1 to 1024"),
    ("slurm_tasks_per_node", -1, "slurm_tasks_per_node: -1 is not a whole number from 0 to 13"),
    ("slurm_time_limit", -5, "slurm_time_limit: -5 is not a whole number from 0 to 525600"),
    ("slurm_options", 7, "slurm_options: 7 is not text"),
]


def test_every_setting_has_a_bad_value_case():
    assert [name for name, _, _ in BAD_VALUES] == list(SETTINGS)


@pytest.mark.parametrize(("name", "value", "expected"), BAD_VALUES)
def test_a_value_out_of_range_is_one_line_naming_the_setting(name, value, expected):
    with pytest.raises(ConfigError) as caught:
        RunConfig(**{name: value}).validate()
    assert str(caught.value) == expected


def test_a_bad_flag_value_names_the_setting_and_its_flag(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--keep", "0"]) == 2
    assert capsys.readouterr().err == (
        "ftgui: keep (--keep): 0 is not a whole number from 1 to 1000\n"
    )
    assert cli.main(["train", str(run_dir), "--chaos-kinds", "kill,boom"]) == 2
    assert capsys.readouterr().err == (
        "ftgui: chaos_kinds (--chaos-kinds): 'boom' is not one of kill, preempt, nan, hang\n"
    )
    assert not run_dir.exists()


def test_pace_is_a_flag_a_panel_spin_and_a_line_of_config_toml(tmp_path, capsys, qtbot):
    """`--pace 40` gives 40 steps per second; config.toml keeps it; the panel shows 0 as
    "as fast as possible"; a negative pace is refused in one line naming the flag."""
    from ftgui.qt.panes.config_panel import ConfigPanel

    args = cli.build_parser().parse_args(["train", str(tmp_path / "run"), "--pace", "40"])
    config = cli.config_from_args(args, RunConfig())
    assert config.pace == 40.0
    configmod.save(tmp_path, config)
    assert "pace = 40.0" in (tmp_path / "config.toml").read_text()
    assert configmod.load(tmp_path).pace == 40.0
    panel = ConfigPanel()
    qtbot.addWidget(panel)
    spin = panel.findChild(object, "paceSpin")
    panel.set_config(RunConfig())
    assert spin.value() == 0 and spin.text() == "as fast as possible"
    panel.set_config(config)
    assert panel.config().pace == 40.0
    run_dir = tmp_path / "refused"
    assert cli.main(["train", str(run_dir), "--pace", "-2"]) == 2
    assert capsys.readouterr().err == "ftgui: pace (--pace): -2.0 is not in [0, 10000]\n"
    assert not run_dir.exists()
