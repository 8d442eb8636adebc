"""The run settings schema: every setting of a run declared once, in `Settings`.

Each field of `Settings` carries a `Setting`: its default, range or choices, unit, help text,
command-line flag, panel label, group and widget, and what happens when a resume asks for another
value (`on_resume`). `RunConfig` (`ftgui.core.settings.config`) is `Settings` plus the cross-field
rules; the `ftgui train` flags (`ftgui.cli`), the window's configuration panel
(`ftgui.qt.panes.config_panel`) and `RUN/config.toml` are all built from `SETTINGS`. Adding a
setting means adding one field here (and the trainer code that uses it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

STRATEGIES = ("default", "one-device", "mirrored", "multi-worker", "parameter-server")
MODELS = ("mlp", "cnn", "resnet")
FAULT_KINDS = ("kill", "preempt", "nan", "hang")
# strategies whose training state lives in one process: the chief saves alone, snapshots work
ONE_PROCESS = ("default", "one-device", "mirrored")
LOOPS = ("custom", "fit")
TASKS = ("classification", "regression")
BUILTIN_DATASETS = ("digits", "synthetic")
MAX_LOGICAL_CPUS = 8
MAX_WORKERS = 8
MAX_PS = 4
MAX_TASKS = 1 + MAX_WORKERS + MAX_PS  # a parameter-server run's chief, workers and ps
MAX_STANDBYS_PER_TASK = 4
MAX_GPUS = 64
MAX_STEPS = 100_000_000
MAX_SEED = 2**31 - 1
MAX_SECONDS = 86400  # one day: the longest fault delay or watchdog
LAUNCHERS = ("local", "slurm")
MAX_SLURM_NODES = 1024
MAX_SLURM_MINUTES = 525_600  # a year: Slurm's time limits are minutes

# What a resume (or fork) that asks for another value of a setting does. Declared here;
# enforcing it is the resume check's job.
APPLIES = "applies"  # takes effect from the resume step (and is recorded)
REFUSED = "refused"  # the checkpoint was made with another value: the resume is refused
FREE = "free"  # run control (length, faults, recovery, layout): may change at any time
ON_RESUME = (APPLIES, REFUSED, FREE)

# Panel groups, in the order they are shown.
GROUPS = {"strategy": "Strategy and devices", "training": "Training",
          "recovery": "Faults and recovery", "launcher": "Launcher (Slurm)"}

# Widget kinds of the panel; `Setting.widget` defaults to one that fits the type.
WIDGETS = ("combo", "spin", "check", "text", "file", "target")


class ConfigError(ValueError):
    """A configuration value is out of range; the message is one line naming the field."""


@dataclass(frozen=True)
class Setting:
    """How one setting is typed, bounded, explained and shown. Read it from `SETTINGS`.

    `default` fixes the type (int, float, bool or str). Numbers lie in [`low`, `high`]
    (`(low, high]` with `open_low`), in `unit`, shown with `decimals` and stepped by
    `spin_step` in the panel; text is one of `choices` (each of them, comma
    separated, with `many`); `choice_labels` are the panel's words for the choices. `off` is the
    panel's text for 0 (a fault that is off). `strategies` names the strategies the setting
    matters for (empty: all). `on_resume` is one of `ON_RESUME`.
    """

    default: object
    help: str
    flag: str
    label: str
    group: str
    object_name: str
    on_resume: str
    unit: str = ""
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    decimals: int = 0
    spin_step: float = 1.0
    choices: tuple[str, ...] = ()
    choice_labels: tuple[str, ...] = ()
    many: bool = False
    off: str = ""
    placeholder: str = ""
    strategies: tuple[str, ...] = ()
    widget: str = ""
    name: str = ""  # filled in from the field

    @property
    def kind(self) -> type:
        """int, float, bool or str."""
        return type(self.default)

    @property
    def widget_kind(self) -> str:
        """One of `WIDGETS`: the declared one, else check / combo / spin / text by type."""
        if self.widget:
            return self.widget
        if self.kind is bool:
            return "check"
        if self.choices and not self.many:
            return "combo"
        return "spin" if self.kind in (int, float) else "text"

    def default_text(self) -> str:
        """The default as a person reads it: `off`, `64`, `0.01`, `none`."""
        if self.kind is bool:
            return "on" if self.default else "off"
        if self.off and not self.default:
            return "off"
        return str(self.default) if self.default != "" else "none"

    def describe(self) -> str:
        """Help text with unit and default, for tooltips and `--help`."""
        unit = f"{self.unit}; " if self.unit else ""
        return f"{self.help} ({unit}default {self.default_text()})"

    def check(self, value) -> None:
        """Raise `ConfigError` when `value` has the wrong type or lies outside this setting's own
        range or choices (rules between settings are `RunConfig.validate`'s)."""
        if self.kind is bool:
            if not isinstance(value, bool):
                raise ConfigError(f"{self.name}: {value!r} is not true or false")
        elif self.kind is int:
            check_whole(self.name, value, int(self.low), int(self.high))
        elif self.kind is float:
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            above = number and (value > self.low if self.open_low else value >= self.low)
            if not (above and value <= self.high):
                bracket = "(" if self.open_low else "["
                unit = " seconds" if self.unit == "seconds" else ""
                raise ConfigError(f"{self.name}: {value!r} is not in "
                                  f"{bracket}{self.low:g}, {self.high:g}]{unit}")
        elif not isinstance(value, str):
            raise ConfigError(f"{self.name}: {value!r} is not text")
        elif self.many:
            for item in split_list(value):
                check_choice(self.name, item, self.choices)
        elif self.choices and self.widget_kind == "combo":
            check_choice(self.name, value, self.choices)


def check_choice(name: str, value, allowed: tuple[str, ...]) -> None:
    """Raise `ConfigError` unless `value` is one of `allowed`."""
    if value not in allowed:
        raise ConfigError(f"{name}: {value!r} is not one of {', '.join(allowed)}")


def check_whole(name: str, value, low: int, high: int) -> None:
    """Raise `ConfigError` unless `value` is an int (not a bool) from `low` to `high`."""
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ConfigError(f"{name}: {value!r} is not a whole number from {low} to {high}")


def split_list(text: str) -> list[str]:
    """The items of a comma list, stripped, empty ones dropped."""
    return [item.strip() for item in text.split(",") if item.strip()]


def setting(default, **declaration):
    """A `Settings` field: `default` plus its `Setting` (see there for the keywords)."""
    return field(default=default, metadata={"setting": Setting(default, **declaration)})


def _fault_step(kind: str, name: str, what: str) -> object:
    return setting(0, help=what, flag=f"--{kind}-at-step", label=f"{name} at step",
                   group="recovery", object_name=f"{kind}AtStepSpin", on_resume=FREE,
                   unit="step", low=0, high=MAX_STEPS, off="off")


def _inside_fault_step(where: str, name: str, what: str) -> object:
    return setting(0, help=what, flag=f"--kill-in-{where}-at-step", label=f"{name} at step",
                   group="recovery", object_name=f"killIn{where.title()}AtStepSpin",
                   on_resume=FREE, unit="step", low=0, high=MAX_STEPS, off="off",
                   strategies=ONE_PROCESS)


def _seconds(default: float, help: str, flag: str, label: str, object_name: str,
             high: float = MAX_SECONDS, decimals: int = 1, off: str = "off") -> object:
    return setting(default, help=help, flag=flag, label=label, group="recovery",
                   object_name=object_name, on_resume=FREE, unit="seconds", low=0, high=high,
                   decimals=decimals, off=off)


_DISTRIBUTED = ("multi-worker", "parameter-server")


@dataclass
class Settings:
    """The values of every run setting; see `SETTINGS` for each one's declaration.

    Units: `steps`, `checkpoint_every` and fault steps count global steps (one optimizer update
    over one global batch); `global_batch_size` counts examples per step summed over all
    replicas. Building one coerces nothing and checks nothing:
    `ftgui.core.settings.config.from_dict` coerces, `RunConfig.validate` checks.
    """

    # -- strategy and devices
    strategy: str = setting(
        "mirrored", help="How training is spread over devices and processes",
        flag="--strategy", label="Strategy", group="strategy", object_name="strategyCombo",
        on_resume=FREE, choices=STRATEGIES,
        choice_labels=("Default (no distribution)", "OneDeviceStrategy", "MirroredStrategy",
                       "MultiWorkerMirroredStrategy", "ParameterServerStrategy"))
    replicas: int = setting(
        2, help="MirroredStrategy replicas on logical CPU devices", flag="--replicas",
        label="CPU replicas", group="strategy", object_name="replicasSpin", on_resume=FREE,
        unit="replicas", low=1, high=MAX_LOGICAL_CPUS, strategies=("mirrored",))
    gpus: int = setting(
        0, help="GPUs for mirrored / one-device (0: CPU); `ftgui devices` lists what is present",
        flag="--gpus", label="GPUs", group="strategy", object_name="gpusSpin", on_resume=FREE,
        unit="GPUs", low=0, high=MAX_GPUS, strategies=("mirrored", "one-device"))
    workers: int = setting(
        2, help="Worker processes (multi-worker: worker 0 is the chief)", flag="--workers",
        label="Workers", group="strategy", object_name="workersSpin", on_resume=FREE,
        unit="processes", low=1, high=MAX_WORKERS, strategies=_DISTRIBUTED)
    ps: int = setting(
        1, help="Parameter-server processes", flag="--ps", label="Parameter servers",
        group="strategy", object_name="psSpin", on_resume=FREE, unit="processes", low=1,
        high=MAX_PS, strategies=("parameter-server",))
    cluster: str = setting(
        "", help="Task addresses, e.g. worker=localhost:0,gpu-box:2222 (jobs chief, worker, ps; "
        "port 0: any free port here); tasks on other machines get a command to run there. "
        "Sets workers and ps",
        flag="--cluster", label="Cluster", group="strategy", object_name="clusterEdit",
        on_resume=FREE, placeholder="all on this machine", strategies=_DISTRIBUTED)
    # -- training
    model: str = setting(
        "mlp", help="The Keras model to train: mlp, cnn, resnet (a residual CNN of 1.2 M "
        "parameters with batch normalization, for images such as the synthetic dataset's), "
        "PATH.py:FUNCTION (FUNCTION(input_shape, num_classes) returns an uncompiled Keras model "
        "giving logits) or PATH.keras (its weights are the starting point)", flag="--model",
        label="Model", group="training",
        object_name="modelCombo", on_resume=REFUSED, choices=MODELS, widget="file")
    task: str = setting(
        "classification", help="classification: integer labels, softmax cross-entropy on "
        "logits; regression: float targets (n, k), mean squared error (a model module's own "
        "`loss` replaces either); the training loss adds the model's regularization losses "
        "(model.losses), as model.fit does", flag="--task", label="Task", group="training",
        object_name="taskCombo", on_resume=REFUSED, choices=TASKS)
    loop: str = setting(
        "custom", help="custom: ftgui's loop, restores the exact step; fit: Keras model.fit with "
        "BackupAndRestore and ModelCheckpoint, for comparison: after a crash it restarts at the "
        "epoch start and the data position is lost",
        flag="--loop", label="Training loop", group="training", object_name="loopCombo",
        on_resume=REFUSED, choices=LOOPS,
        choice_labels=("custom loop (restores the exact step)",
                       "Keras model.fit (restores to the epoch start)"))
    dataset: str = setting(
        "digits", help="digits (built in: 1,797 8×8 handwritten digits), synthetic (built in: "
        "5,000 32×32×3 images of 10 classes generated from a fixed seed), a FILE.npz with arrays "
        "x and y, or PATH.py:FUNCTION returning numpy (x_train, y_train) or (x_train, y_train, "
        "x_val, y_val)",
        flag="--dataset",
        label="Dataset", group="training", object_name="datasetCombo", on_resume=REFUSED,
        choices=BUILTIN_DATASETS, widget="file")
    global_batch_size: int = setting(
        64, help="Global batch size: examples per step over all replicas", flag="--batch-size",
        label="Global batch size", group="training", object_name="batchSizeSpin",
        on_resume=APPLIES, unit="examples", low=1, high=1_000_000)
    learning_rate: float = setting(
        0.01, help="Learning rate: Adam's step size", flag="--lr", label="Learning rate",
        group="training", object_name="learningRateSpin", on_resume=APPLIES, low=0, high=10,
        open_low=True, decimals=5, spin_step=0.001)
    steps: int = setting(
        2000, help="Global steps to train (one optimizer update over one global batch each)",
        flag="--steps", label="Steps", group="training", object_name="stepsSpin",
        on_resume=FREE, unit="steps", low=1, high=MAX_STEPS)
    checkpoint_every: int = setting(
        100, help="Save a checkpoint every this many steps", flag="--checkpoint-every",
        label="Checkpoint every", group="training", object_name="checkpointEverySpin",
        on_resume=FREE, unit="steps", low=1, high=MAX_STEPS)
    keep: int = setting(
        5, help="Newest checkpoints kept; older ones are deleted", flag="--keep",
        label="Checkpoints kept", group="training", object_name="keepSpin", on_resume=FREE,
        unit="checkpoints", low=1, high=1000)
    seed: int = setting(
        42, help="Seed of the weights and the data order (runs with one seed are repeatable)",
        flag="--seed", label="Seed", group="training", object_name="seedSpin",
        on_resume=REFUSED, low=0, high=MAX_SEED)
    pace: float = setting(
        0.0, help="Steps per second at most, for a room to watch (0: as fast as possible); "
        "the trainer waits between steps, which changes no loss", flag="--pace",
        label="Pace", group="training", object_name="paceSpin", on_resume=FREE,
        unit="steps/s", low=0, high=10_000, decimals=1, off="as fast as possible")
    # -- faults and recovery
    auto_recover: bool = setting(
        False, help="After a crash, restart from the newest valid checkpoint",
        flag="--auto-recover", label="Automatic recovery", group="recovery",
        object_name="autoRecoverCheck", on_resume=FREE)
    max_restarts: int = setting(
        3, help="Automatic restarts before the run is given up", flag="--max-restarts",
        label="Max restarts", group="recovery", object_name="maxRestartsSpin", on_resume=FREE,
        unit="restarts", low=0, high=1000)
    restart_backoff: float = _seconds(
        1.0, "Wait before the first automatic restart, doubling each time", "--restart-backoff",
        "Restart backoff", "restartBackoffSpin", high=600, decimals=2, off="")
    warm_standby: bool = setting(
        False, help="Keep one process per task with TensorFlow imported, ready to replace a "
        "lost one, so that recovery skips the import (costs one more process and its memory)",
        flag="--warm-standby", label="Warm standby", group="recovery",
        object_name="warmStandbyCheck", on_resume=FREE)
    standbys_per_task: int = setting(
        1, help="Warm standbys kept per task: 2 keeps a second standby ready when a second "
        "fault comes before the replacement of the first one is built (about 1 s for the "
        "MLP, several for a larger model; 3-7 s more when the fork server it comes from is "
        "still importing TensorFlow); a multi-worker standby cluster is one whatever this "
        "says",
        flag="--standbys-per-task", label="Standbys per task", group="recovery",
        object_name="standbysPerTaskSpin", on_resume=FREE, unit="processes", low=1,
        high=MAX_STANDBYS_PER_TASK)
    max_standbys: int = setting(
        MAX_TASKS, help="The most warm standby processes kept at once (each is a trainer "
        "with TensorFlow imported and the state built: 0.7-0.9 GB resident); a task beyond "
        "the cap restarts cold, and a multi-worker standby cluster is kept only if all its "
        "workers fit", flag="--max-standbys", label="Max standbys", group="recovery",
        object_name="maxStandbysSpin", on_resume=FREE, unit="processes", low=0,
        high=MAX_TASKS, off="none")
    snapshot_every: int = setting(
        1, help="Copy the whole training state into shared memory every this many steps, so "
        "that recovery from a process crash redoes at most that many steps (0: off; a lost "
        "machine still needs the disk checkpoints)",
        flag="--snapshot-every", label="Snapshot every", group="recovery",
        object_name="snapshotEverySpin", on_resume=FREE, unit="steps", low=0, high=MAX_STEPS,
        off="off", strategies=ONE_PROCESS)
    kill_at_step: int = _fault_step("kill", "Kill", "Crash (SIGKILL) the fault target right "
                                    "after this step")
    preempt_at_step: int = _fault_step("preempt", "Preempt", "Preempt (SIGTERM: save, then "
                                       "stop) the fault target at this step")
    nan_at_step: int = _fault_step("nan", "NaN", "Inject a NaN into this step's loss; the run "
                                   "rolls back")
    hang_at_step: int = _fault_step("hang", "Hang", "Freeze (SIGSTOP) the fault target after "
                                    "this step; needs the watchdog")
    kill_in_save_at_step: int = _inside_fault_step(
        "save", "Kill in save", "Crash (SIGKILL) the chief inside the checkpoint save of this "
        "step: after TensorFlow's files, before the metadata that makes it valid (the step "
        "must get a checkpoint)")
    kill_in_snapshot_at_step: int = _inside_fault_step(
        "snapshot", "Kill in snapshot", "Crash (SIGKILL) the chief inside the in-memory "
        "snapshot of this step: half its bytes copied, before its checksum (the step must get "
        "a snapshot)")
    kill_after_seconds: float = _seconds(
        0.0, "Crash the fault target after this many seconds of training (once per run)",
        "--kill-after-seconds", "Kill after", "killAfterSpin")
    watchdog_seconds: float = _seconds(
        0.0, "Kill and recover a run that makes no progress this long", "--watchdog-seconds",
        "Watchdog", "watchdogSpin")
    chaos_faults: int = setting(
        0, help="Random faults at random steps, repeatable from the chaos seed",
        flag="--chaos-faults", label="Chaos faults", group="recovery",
        object_name="chaosFaultsSpin", on_resume=FREE, unit="faults", low=0, high=1000,
        off="off")
    chaos_kinds: str = setting(
        "kill,preempt,nan", help="Kinds the chaos faults are drawn from, comma separated: "
        + ", ".join(FAULT_KINDS), flag="--chaos-kinds", label="Chaos kinds", group="recovery",
        object_name="chaosKindsEdit", on_resume=FREE, choices=FAULT_KINDS, many=True)
    chaos_seed: int = setting(
        0, help="Seed of the chaos schedule", flag="--chaos-seed", label="Chaos seed",
        group="recovery", object_name="chaosSeedSpin", on_resume=FREE, low=0, high=MAX_SEED)
    fault_target: str = setting(
        "chief", help="Which process the scheduled faults hit: chief, worker:I or ps:I",
        flag="--fault-target", label="Fault target", group="recovery",
        object_name="faultTargetCombo", on_resume=FREE, widget="target")
    # -- launcher
    launcher: str = setting(
        "local", help="Who starts the training processes: local (ftgui, on this machine) or "
        "slurm (one batch job submitted with sbatch, a task per process; the run folder must "
        "be on storage the nodes share)", flag="--launcher", label="Launcher",
        group="launcher", object_name="launcherCombo", on_resume=FREE, choices=LAUNCHERS,
        choice_labels=("this machine (ftgui starts the processes)",
                       "Slurm (sbatch, one task per process)"))
    slurm_partition: str = setting(
        "", help="Slurm partition the job is submitted to (sbatch --partition; empty: the "
        "cluster's default partition)", flag="--slurm-partition", label="Partition",
        group="launcher", object_name="slurmPartitionEdit", on_resume=FREE,
        placeholder="the default partition")
    slurm_nodes: int = setting(
        1, help="Nodes the job's tasks are spread over (sbatch --nodes)", flag="--slurm-nodes",
        label="Nodes", group="launcher", object_name="slurmNodesSpin", on_resume=FREE,
        unit="nodes", low=1, high=MAX_SLURM_NODES)
    slurm_tasks_per_node: int = setting(
        0, help="Tasks (training processes) per node (0: the tasks divided over the nodes)",
        flag="--slurm-tasks-per-node", label="Tasks per node",
        group="launcher", object_name="slurmTasksPerNodeSpin", on_resume=FREE, unit="tasks",
        low=0, high=MAX_WORKERS + MAX_PS + 1, off="auto")
    slurm_time_limit: int = setting(
        0, help="The job's time limit (sbatch --time; 0: the partition's limit)",
        flag="--slurm-time-limit", label="Time limit", group="launcher",
        object_name="slurmTimeLimitSpin", on_resume=FREE, unit="minutes", low=0,
        high=MAX_SLURM_MINUTES, off="the partition's")
    slurm_options: str = setting(
        "", help="Extra sbatch options, as on its command line (e.g. --account=ml); they are "
        "written into the job script", flag="--slurm-options",
        label="Extra sbatch options", group="launcher", object_name="slurmOptionsEdit",
        on_resume=FREE, placeholder="none")


SETTINGS: dict[str, Setting] = {
    f.name: dataclasses.replace(f.metadata["setting"], name=f.name)
    for f in dataclasses.fields(Settings)
}
