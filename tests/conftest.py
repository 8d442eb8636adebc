"""Shared fixtures for the Qt-free tests: one finished training run, and helpers that drive a
supervisor the way `ftgui train` does (no Qt is imported here). In a `-m "not tf"` run, a test
that imports TensorFlow fails (the quick suite must stay quick)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from ftgui import cli
from ftgui.core.checkpoints import listing
from ftgui.core.record import events
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import RunConfig


def _quick_suite(config: pytest.Config) -> bool:
    """Whether this run is the display-free quick suite, `pytest -m "not tf"`."""
    return " ".join(config.getoption("markexpr").split()) == "not tf"


@pytest.fixture(autouse=True)
def _no_tensorflow_in_the_quick_suite(request):
    """Fail the test of a `-m "not tf"` run during which TensorFlow got imported."""
    imported_before = "tensorflow" in sys.modules
    yield
    if _quick_suite(request.config) and not imported_before and "tensorflow" in sys.modules:
        pytest.fail(f"{request.node.nodeid} imported tensorflow: mark it tf or import less",
                    pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def _user_code_checks_kept_for_this_session(tmp_path_factory):
    """Passed user-code checks are kept in a folder of this session (both xdist workers'),
    not in the user's cache folder: a test sees the checks this session ran, and no other."""
    from ftgui.core.settings import user_code

    session = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the workers' folders share a parent
        session = session.parent
    folder = session / "user-code-checks"
    before = os.environ.get(user_code.CACHE_DIR_ENV)
    os.environ[user_code.CACHE_DIR_ENV] = str(folder)
    yield folder
    if before is None:
        os.environ.pop(user_code.CACHE_DIR_ENV, None)
    else:
        os.environ[user_code.CACHE_DIR_ENV] = before


@pytest.fixture(scope="session", autouse=True)
def _snapshots_of_this_session_freed(tmp_path_factory):
    """At the end, delete the shared-memory snapshot files of the runs in this session's
    (this xdist worker's) temporary folder: a killed or stopped run keeps its file for a
    resume, and pytest keeps the folder, so the supervisor's sweep would never free them."""
    from ftgui.core.checkpoints import snapshots

    yield
    ours = tmp_path_factory.getbasetemp().resolve()
    for path in snapshots.snapshot_dir().glob("ftgui-*.snapshot"):
        snapshot = snapshots.SnapshotFile.open(path)
        if snapshot is not None and snapshot.run_dir.is_relative_to(ours):
            path.unlink(missing_ok=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tf tests first, each file's in its order, then the quick ones: the two xdist workers
    then end on short tests and finish together (a training test collected last could leave
    one worker idle for its minute or two)."""
    items.sort(key=lambda item: item.get_closest_marker("tf") is None)


# pyproject's addopts run the suite on 2 pytest-xdist workers: each worker reports whether it
# imported TensorFlow (also while collecting) in its `workeroutput`, read by the controller.
_WORKERS_IMPORTED_TF = pytest.StashKey[bool]()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """xdist, on the controller: note a worker that imported TensorFlow."""
    if getattr(node, "workeroutput", {}).get("imported_tensorflow"):
        node.config.stash[_WORKERS_IMPORTED_TF] = True


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A `-m "not tf"` run that imported TensorFlow anywhere (also while collecting, also in
    an xdist worker) fails."""
    imported = "tensorflow" in sys.modules
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller decides
        workeroutput["imported_tensorflow"] = imported
        return
    imported = imported or session.config.stash.get(_WORKERS_IMPORTED_TF, False)
    if _quick_suite(session.config) and imported:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line('error: tensorflow was imported in a -m "not tf" run')
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def made_once(tmp_path_factory, name: str, make: Callable[[Path], None]) -> Path:
    """The folder `name`, filled by `make(folder)` once per test session, also across
    pytest-xdist workers (each a process of its own): the first worker to ask makes it under a
    file lock, the others wait for it and reuse it. A reference run costs a TensorFlow start
    or more, and worksteal spreads a module's tests over both workers. Tests must not change
    the folder: copy it first. A `make` that raises leaves nothing: the next asker tries again."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above every worker's own
    shared = root / "made-once"
    shared.mkdir(exist_ok=True)
    folder, done = shared / name, shared / f"{name}.done"
    with open(shared / f"{name}.lock", "w") as lock, _locked(lock):
        if not done.exists():
            if folder.exists():  # a make that failed half-way
                shutil.rmtree(folder)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder


@contextlib.contextmanager
def _locked(handle):
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: one process per session then (-n 0)
        yield
        return
    fcntl.flock(handle, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)


# The run most tests compare against: MirroredStrategy on 2 logical CPUs, digits, MLP, global
# batch 64, seed 42, 60 steps with a checkpoint every 10 (the defaults keep the newest 5).
# Recovery from disk: snapshots (default every step) off, so a kill after step 35 restores
# checkpoint 30 and redoes 5 steps (tests of snapshots give their own --snapshot-every).
BASELINE_FLAGS = ["--steps", "60", "--checkpoint-every", "10", "--snapshot-every", "0"]


@pytest.fixture(scope="session")
def baseline_run(tmp_path_factory) -> Path:
    """A 60-step run trained once (per session, shared by the xdist workers: `made_once`),
    never interrupted. Tests must not change it: copy it first."""
    def train(folder: Path) -> None:
        assert cli.main(["train", str(folder / "run"), *BASELINE_FLAGS, "--quiet"]) == 0

    return made_once(tmp_path_factory, "baseline", train) / "run"


@pytest.fixture
def fresh_copy_of_baseline(tmp_path, baseline_run):
    """A run directory `tmp_path/run` with the baseline's configuration and nothing else."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(baseline_run / "config.toml", run_dir / "config.toml")
    return run_dir


@pytest.fixture(scope="session")
def baseline_losses(baseline_run) -> dict[int, float]:
    return events.final_losses(events.read_all(baseline_run))


@pytest.fixture(scope="session")
def killed_at_25_and_recovered(tmp_path_factory) -> tuple[Path, list[str]]:
    """`ftgui train RUN --steps 40 --checkpoint-every 10 --snapshot-every 0 --kill-at-step 25
    --auto-recover --restart-backoff 0` (recovered from checkpoint 20, from disk): the run's
    folder and the lines the command printed. Made once per session (`made_once`); tests
    must not change the folder."""
    def train(folder: Path) -> None:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            status = cli.main(["train", str(folder / "run"), "--steps", "40",
                               "--checkpoint-every", "10", "--snapshot-every", "0",
                               "--kill-at-step", "25", "--auto-recover", "--restart-backoff", "0"])
        assert status == 0, printed.getvalue()
        (folder / "printed.txt").write_text(printed.getvalue(), encoding="utf-8")

    folder = made_once(tmp_path_factory, "killed-at-25-and-recovered", train)
    return folder / "run", (folder / "printed.txt").read_text(encoding="utf-8").splitlines()


def fake_checkpoint(run_dir, step: int, shards: int = 1, metadata: bool = True):
    """Files of a finished save of `step` (index + data shards), then its metadata."""
    directory = listing.checkpoint_dir(run_dir)
    directory.mkdir(parents=True, exist_ok=True)
    prefix = directory / f"ckpt-{step}"
    (directory / f"ckpt-{step}.index").write_bytes(b"i" * (100 + step))
    for k in range(shards):
        (directory / f"ckpt-{step}.data-{k:05d}-of-{shards:05d}").write_bytes(b"d" * (1000 + k))
    if metadata:
        listing.write_metadata(
            prefix, loss=1.0 / step, time=1_000_000.0 + step, strategy="mirrored"
        )
    return prefix


@pytest.fixture
def finished_run(tmp_path) -> Path:
    """A run directory as a finished 60-step run leaves it, made without TensorFlow: its
    config.toml, its events, and (fake) checkpoints of steps 20 … 60."""
    run_dir = tmp_path / "finished"
    configmod.save(run_dir, RunConfig(steps=60, checkpoint_every=10))
    with events.EventWriter(run_dir, attempt=0) as writer:
        writer.emit("run_started")
        writer.emit("run_finished", step=60, loss=0.125)
    for step in (20, 30, 40, 50, 60):
        fake_checkpoint(run_dir, step)
    return run_dir


CONVERTED_MODEL = """
import keras
import tensorflow as tf
from keras import layers


@tf.function  # autograph (on by default) converts it: the trainer's only converted function
def doubled(x):
    return x * 2.0


class Doubled(layers.Layer):
    def call(self, x):
        return doubled(x)


def build(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = Doubled()(layers.Flatten()(inputs))
    return keras.Model(inputs, layers.Dense(num_classes)(x))
"""


def converted_model(folder: Path) -> str:
    """`--model` of a user model file written in `folder` with one function that TensorFlow's
    autograph converts, writing its generated source file in the trainer (ftgui's own traced
    functions are not converted: `ftgui.training.traced`)."""
    path = folder / "converted.py"
    path.write_text(CONVERTED_MODEL)
    return f"{path}:build"


def poll_until(supervisor, condition) -> list[dict]:
    """Poll `supervisor` like the CLI loop does until `condition(all_events_so_far)` holds.

    Returns the events seen. The suite's per-test timeout bounds the wait.
    """
    seen: list[dict] = []
    while True:
        seen.extend(supervisor.poll())
        if condition(seen):
            return seen
        time.sleep(0.02)


def poll_until_done(supervisor) -> list[dict]:
    """Poll until nothing of the run is alive and no restart is pending."""
    seen = poll_until(supervisor, lambda _: not supervisor.live)
    return seen + supervisor.poll()


PLOT_READY_MS = 60_000  # a bound for a loaded machine, not a speed requirement


def _main_window(qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    from ftgui.qt.window.main_window import MainWindow

    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    win = MainWindow(settings=settings)
    qtbot.addWidget(win)
    return win


@pytest.fixture
def window(qtbot, tmp_path):
    """The main window, shown, its settings in a file of `tmp_path`; its controller shut down
    after the test."""
    win = _main_window(qtbot, tmp_path)
    win.show()
    yield win
    win.controller.shutdown()


@pytest.fixture
def ready_window(qtbot, tmp_path):
    """The window as a user sees it a moment after start: shown, its plot created."""
    win = _main_window(qtbot, tmp_path)
    with qtbot.waitSignal(win.plotReady, timeout=PLOT_READY_MS):
        win.show()  # the plot is created right after the window's first paint
    yield win
    win.controller.shutdown()


def alive(pids) -> list[int]:
    """Those of `pids` that are still running (a zombie is not)."""
    running = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                running.append(pid)
        except psutil.NoSuchProcess:
            pass
    return running


def processes_of(run_dir: Path) -> list[psutil.Process]:
    """Live (non-zombie) processes whose command line names `run_dir`."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["status"] != psutil.STATUS_ZOMBIE and str(run_dir) in cmdline:
            found.append(proc)
    return found


def of_kind(all_events: list[dict], kind: str, **match) -> list[dict]:
    """The events of type `kind` whose fields equal `match`."""
    return [e for e in all_events
            if e["event"] == kind and all(e.get(k) == v for k, v in match.items())]


# What every stand-in trainer starts with: the trainer's command line (`python -m
# ftgui.training RUN --role R --index I --attempt N ...`), its plan and its event writer.
STAND_IN_PRELUDE = """
import json, os, sys, time
from ftgui.core.record.events import EventWriter

argv = sys.argv
run_dir = argv[argv.index("ftgui.training") + 1]
role, index = argv[argv.index("--role") + 1], int(argv[argv.index("--index") + 1])
attempt = int(argv[argv.index("--attempt") + 1])
plan = json.loads(os.environ["STAND_IN_PLAN"]).get(f"{role}:{index}:{attempt}", [])
writer = EventWriter(run_dir, attempt)
"""


def stand_in_python(tmp_path: Path, monkeypatch, source: str):
    """A stand-in for the Python that runs trainers: a launcher script that runs
    `STAND_IN_PRELUDE` then `source` (a trainer stand-in, no TensorFlow, acting on `plan`,
    the list of [action, value] for its `role:index:attempt`) with the trainer's arguments.
    Returns `with_plan(plan)`, which puts `plan` (a dict, as JSON) in the environment and
    gives the launcher's path (for `Supervisor(python=…)`)."""
    script = tmp_path / "stand_in_trainer.py"
    script.write_text(STAND_IN_PRELUDE + source)
    launcher = tmp_path / "fake-python"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)

    def with_plan(plan: dict) -> str:
        monkeypatch.setenv("STAND_IN_PLAN", json.dumps(plan))
        return str(launcher)

    return with_plan


def network_address() -> str:
    """An IPv4 address of this machine other than loopback (the one a neighbour reaches)."""
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family == socket.AF_INET and not address.address.startswith("127."):
                return address.address
    pytest.skip("this machine has no network address other than loopback: no neighbour "
                "could connect, and there is nothing to check")


SLURM_CONF_ENV = "FTGUI_SLURM_CONF"  # the slurm.conf of the cluster CI (or you) started
REQUIRE_SLURM_ENV = "FTGUI_REQUIRE_SLURM"  # 1 on CI: no cluster is a failure, not a skip


@pytest.fixture(scope="session")
def slurm_conf() -> Path:
    """The `slurm.conf` of a running single-node cluster (`tools/slurm-cluster up DIR`, named
    by FTGUI_SLURM_CONF), also set as SLURM_CONF for the Slurm commands the tests and ftgui
    run. Skips with the reason when there is none, or fails when FTGUI_REQUIRE_SLURM=1 (CI)."""
    import os
    import shutil
    import subprocess

    def unavailable(reason: str):
        if os.environ.get(REQUIRE_SLURM_ENV) == "1":
            pytest.fail(f"Slurm required on CI ({REQUIRE_SLURM_ENV}=1) but {reason}",
                        pytrace=False)
        pytest.skip(f"no Slurm cluster: {reason} (start one with `tools/slurm-cluster up DIR` "
                    f"and set {SLURM_CONF_ENV} to its slurm.conf)")

    conf = os.environ.get(SLURM_CONF_ENV)
    if not conf:
        unavailable(f"{SLURM_CONF_ENV} is not set")
    if not shutil.which("sbatch"):
        unavailable("sbatch is not on the PATH")
    if not os.access(conf, os.R_OK):
        unavailable(f"{conf} is not readable")
    os.environ["SLURM_CONF"] = conf
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True,
                         timeout=30)
    if out.returncode != 0 or not out.stdout.strip():
        unavailable(f"sinfo fails ({out.stderr.strip() or 'no nodes'})")
    return Path(conf)


FAKE_SPARE = """#!{python}
import json, os, sys, time
from pathlib import Path
from ftgui.core.record.events import emit
from ftgui.core.settings import config as configmod
from ftgui.core.supervision.standby import config_fingerprint
from ftgui.training.__main__ import _log_to
folder = Path(sys.argv[-1])
if os.environ.get("FAKE_SPARE_DIES"):
    sys.exit(3)
while os.environ.get("FAKE_SPARE_HOLD") and not Path(os.environ["FAKE_SPARE_HOLD"]).exists():
    time.sleep(0.01)
print("fake spare: built", flush=True)
unprepared = bool(os.environ.get("FAKE_SPARE_UNPREPARED"))
emit(folder, "standby_ready", -1, pid=os.getpid(), prepared=not unprepared,
     prepared_for=None if unprepared else config_fingerprint(configmod.load(folder).to_dict()))
line = sys.stdin.readline()
if line.strip():
    order = json.loads(line)
    if order.get("log"):
        _log_to(Path(order["log"]))
    print("fake spare: ordered", flush=True)
    (Path(os.environ["FAKE_ORDERS"]) / f"{{os.getpid()}}.json").write_text(line)
    time.sleep(float(os.environ.get("FAKE_SPARE_LINGER", "0")))
"""


@pytest.fixture
def spare(tmp_path, monkeypatch):
    """A `SpareTrainer` whose interpreter is a script that behaves like a prepared standby
    (`FAKE_SPARE`: no TensorFlow); its orders go to tmp/orders/<pid>.json."""
    from ftgui.core.supervision.spare import SpareTrainer


    fake = tmp_path / "fake-python"
    fake.write_text(FAKE_SPARE.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "orders").mkdir()
    monkeypatch.setenv("FAKE_ORDERS", str(tmp_path / "orders"))
    made = SpareTrainer(tmp_path / "spares", python=str(fake), fork=False)
    yield made
    made.dismiss()


def until_spare_ready(spare, count: int = 1) -> None:
    """Wait until `count` spares of `spare` (a `SpareTrainer`, kept by calling its `keep`
    with the settings it has) have read their `standby_ready`; AssertionError with a log if
    one died first. The suite's per-test timeout bounds the wait."""
    while spare.ready() < count:
        for one in spare.spares:
            assert one.popen.poll() is None, (one.folder / "spare.log").read_text()
        time.sleep(0.02)
