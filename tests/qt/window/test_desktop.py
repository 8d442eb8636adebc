"""ftgui as a desktop citizen: --version, python -m ftgui, the icon, the launcher entry, Open
Recent, drag and drop, Help, and a quit that asks before it stops training."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import fnmatch
import platform
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import psutil
import pytest
from PySide6.QtCore import QMimeData, QPointF, QSettings, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import QApplication, QLabel, QMenu

from ftgui import cli, desktop_entry, icons
from ftgui.core.checkpoints import listing
from ftgui.core.record import events, runs
from ftgui.core.settings.config import RunConfig, tomllib
from ftgui.qt.window import quit_guard
from ftgui.qt.window.main_window import MainWindow
from ftgui.qt.window.quit_guard import KILL, PREEMPT, QuitGuard

PLOT_READY_MS = 60_000  # a bound for a loaded machine, not a speed requirement
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}


def ftgui_command(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          env=env or ENV, timeout=120)


def imported_modules(importtime_stderr: str) -> set[str]:
    """Top-level package names of the modules `python -X importtime` reports."""
    names = set()
    for line in importtime_stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


# ------------------------------------------------------------ the command line
def test_version_prints_the_package_version_without_qt_or_tensorflow():
    result = ftgui_command("-X", "importtime", "-m", "ftgui", "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"ftgui {metadata.version('ftgui')}\n"
    loaded = imported_modules(result.stderr)
    assert "ftgui" in loaded  # the probe works
    assert not loaded & {"PySide6", "shiboken6", "tensorflow", "keras", "pyqtgraph", "numpy"}


def test_verbose_version_names_the_stack_from_metadata_without_importing_tensorflow():
    result = ftgui_command("-X", "importtime", "-m", "ftgui", "--version", "--verbose")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"ftgui {metadata.version('ftgui')}"
    assert f"TensorFlow {metadata.version('tensorflow')}" in lines
    assert f"PySide6 {metadata.version('PySide6')}" in lines
    assert f"pyqtgraph {metadata.version('pyqtgraph')}" in lines
    assert f"Python {platform.python_version()} (CPython)" in lines
    assert any(line.startswith("Qt 6.") for line in lines)
    assert not imported_modules(result.stderr) & {"tensorflow", "keras", "pyqtgraph"}


def test_verbose_alone_is_refused_in_one_line(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--verbose"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_python_m_ftgui_help_works():
    result = ftgui_command("-m", "ftgui", "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: ftgui")
    for word in ("--version", "install-desktop-entry", "train", "open"):
        assert word in result.stdout


# ------------------------------------------------------------ the launcher entry
def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def test_desktop_entry_installs_under_xdg_data_home_and_uninstalls_exactly_that(tmp_path):
    data = tmp_path / "data"
    (data / "applications").mkdir(parents=True)
    mine = data / "applications" / "someone-else.desktop"  # a user's own file stays
    mine.write_text("[Desktop Entry]\n")
    env = {**ENV, "XDG_DATA_HOME": str(data)}

    result = ftgui_command("-m", "ftgui", "install-desktop-entry", env=env)
    assert result.returncode == 0, result.stderr
    entry = data / "applications" / "ftgui.desktop"
    text = entry.read_text()
    assert text.startswith("[Desktop Entry]\nType=Application\n")
    assert "\nIcon=ftgui\n" in text and "\nTerminal=false\n" in text
    exec_line = next(line for line in text.splitlines() if line.startswith("Exec="))
    assert exec_line.split("=", 1)[1].split()[0].endswith(("ftgui", "python", "python3",
                                                           Path(sys.executable).name))
    validator = shutil.which("desktop-file-validate")  # desktop-file-utils, where installed
    if validator:
        checked = subprocess.run([validator, str(entry)], capture_output=True, text=True)
        assert (checked.returncode, checked.stdout + checked.stderr) == (0, "")
    for size in icons.ICON_SIZES:
        png = data / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "ftgui.png"
        assert png.read_bytes() == icons.png_path(size).read_bytes()
    svg = data / "icons" / "hicolor" / "scalable" / "apps" / "ftgui.svg"
    assert svg.read_bytes() == icons.svg_path().read_bytes()
    written = [line.removeprefix("wrote ") for line in result.stdout.splitlines()]
    assert len(written) == len(icons.ICON_SIZES) + 2

    result = ftgui_command("-m", "ftgui", "install-desktop-entry", "--uninstall", env=env)
    assert result.returncode == 0, result.stderr
    assert sorted(line.removeprefix("removed ") for line in result.stdout.splitlines()) == (
        sorted(written))
    assert files_under(data) == [mine]
    assert not (data / "icons").exists()  # folders it created, now empty, are gone too
    assert (data / "applications").is_dir()  # the folder that was there before stays

    again = ftgui_command("-m", "ftgui", "install-desktop-entry", "--uninstall", env=env)
    assert again.returncode == 0 and "no launcher entry installed" in again.stdout


def test_exec_arguments_with_spaces_are_quoted_as_the_specification_asks():
    text = desktop_entry.desktop_file_text(["/opt/my tools/bin/ftgui"])
    assert '\nExec="/opt/my tools/bin/ftgui"\n' in text
    assert desktop_entry._exec_quote("50%") == "50%%"
    assert desktop_entry._exec_quote('a"b') == '"a\\"b"'


def test_the_icon_ships_in_every_size_and_as_svg():
    assert icons.svg_path().read_text().lstrip().startswith("<?xml")
    for size in icons.ICON_SIZES:
        assert icons.png_path(size).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_pyproject_ships_every_icon_file_with_the_package():
    root = Path(__file__).resolve().parents[3]
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["ftgui"]
    shipped = [icons.svg_path(), *(icons.png_path(size) for size in icons.ICON_SIZES)]
    for path in shipped:
        inside = path.relative_to(root / "ftgui").as_posix()
        assert any(fnmatch.fnmatch(inside, pattern) for pattern in patterns), inside


# ------------------------------------------------------------ the window
def settings_at(folder: Path) -> QSettings:
    return QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def make_window(qtbot, tmp_path):
    """Windows sharing one settings file in tmp_path, shown with their plot created."""
    made = []

    def make() -> MainWindow:
        win = MainWindow(settings=settings_at(tmp_path))
        qtbot.addWidget(win)
        with qtbot.waitSignal(win.plotReady, timeout=PLOT_READY_MS):
            win.show()
        made.append(win)
        return win

    yield make
    for win in made:
        win.controller.shutdown()


def test_window_has_the_ftgui_icon_in_every_size(make_window):
    window = make_window()
    icon = window.windowIcon()
    assert not icon.isNull()
    assert {s.width() for s in icon.availableSizes()} >= set(icons.ICON_SIZES)


def recent_actions(window: MainWindow):
    menu = window.findChild(QMenu, "recentRunsMenu")
    menu.aboutToShow.emit()  # as when the user opens it
    return [a for a in menu.actions() if not a.isSeparator() and a.text() != "&Clear list"]


def test_open_recent_lists_a_run_opened_before_and_reopens_it(make_window, finished_run,
                                                               tmp_path):
    first = make_window()
    first.open_run(finished_run)
    first.close()

    window = make_window()  # the next start of ftgui, same settings
    [action] = recent_actions(window)
    assert action.text() == "&1 finished"
    assert action.toolTip() == str(finished_run.absolute())
    assert action.isEnabled()
    action.trigger()
    assert window.controller.supervisor.run_dir == finished_run.absolute()
    assert window.windowTitle() == "ftgui — finished"


def test_open_recent_keeps_ten_newest_first_and_greys_out_missing_folders(make_window,
                                                                         tmp_path):
    window = make_window()
    for k in range(12):
        (tmp_path / f"run{k}").mkdir()
        window.recent_runs.remember(tmp_path / f"run{k}")
    window.recent_runs.remember(tmp_path / "run5")  # opened again: moves to the top
    (tmp_path / "run9").rmdir()
    actions = recent_actions(window)
    names = [a.text().split(" ", 1)[1] for a in actions]
    assert names == ["run5", "run11", "run10", "run9", "run8", "run7", "run6", "run4", "run3",
                     "run2"]
    gone = actions[3]
    assert not gone.isEnabled() and gone.toolTip() == f"{tmp_path / 'run9'} (not found)"
    assert all(a.isEnabled() for i, a in enumerate(actions) if i != 3)


def drop(window: MainWindow, path: Path) -> bool:
    """Drag `path` over the window and drop it, as a file manager does; True if accepted."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    enter = QDragEnterEvent(window.rect().center(), Qt.DropAction.CopyAction, mime,
                            Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, enter)
    if not enter.isAccepted():
        return False
    event = QDropEvent(QPointF(window.rect().center()), Qt.DropAction.CopyAction, mime,
                       Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, event)
    return event.isAccepted()


def test_dropping_a_run_folder_or_its_events_file_opens_it(make_window, finished_run,
                                                           tmp_path):
    window = make_window()
    assert window.acceptDrops()
    assert drop(window, finished_run)
    assert window.controller.supervisor.run_dir == finished_run.absolute()
    assert window.table.model().rowCount() == 5  # its checkpoints are listed

    other = tmp_path / "other"
    with events.EventWriter(other, 0) as writer:
        writer.emit("step", step=1, loss=0.5)
    assert drop(window, other / "events.jsonl")
    assert window.controller.supervisor.run_dir == other.absolute()

    (tmp_path / "not-a-run").mkdir()
    assert not drop(window, tmp_path / "not-a-run")
    assert window.controller.supervisor.run_dir == other.absolute()


def test_about_names_the_versions_without_importing_tensorflow(make_window):
    window = make_window()
    tensorflow_before = "tensorflow" in sys.modules
    window.help_menu.about_action.trigger()
    dialog = window.help_menu.about
    assert dialog.isVisible() and not dialog.isModal()
    text = dialog.findChild(QLabel, "aboutText").text()
    for name, dist in (("TensorFlow", "tensorflow"), ("PySide6", "PySide6"),
                       ("pyqtgraph", "pyqtgraph"), ("ftgui", "ftgui")):
        assert f"<td>{name}</td><td><b>{metadata.version(dist)}</b>" in text
    assert platform.python_version() in text
    dialog.copy_versions()
    assert f"TensorFlow {metadata.version('tensorflow')}" in QApplication.clipboard().text()
    assert ("tensorflow" in sys.modules) == tensorflow_before


def test_open_documentation_shows_the_docs_pages_in_the_order_of_the_nav(make_window,
                                                                          monkeypatch):
    # It showed the README; the manual moved to docs/ (issue 26), so it shows those pages.
    from ftgui.qt.window import about

    window = make_window()
    window.help_menu.docs_action.trigger()
    dialog = window.help_menu.documentation
    browser, pages = dialog.browser, dialog.page_list
    docs = Path(__file__).resolve().parents[3] / "docs"
    titles = [pages.item(row).text() for row in range(pages.count())]
    assert titles[:3] == ["Home", "Getting started", "The window"]
    assert titles[-2:] == ["Glossary", "Benchmark history"]
    assert [path for _, path in dialog.pages][:2] == [docs / "index.md",
                                                     docs / "getting-started.md"]
    first = (docs / "index.md").read_text()
    assert pages.currentRow() == 0
    assert first.splitlines()[0].lstrip("# ") in browser.toPlainText()
    pages.setCurrentRow(titles.index("The window"))
    assert browser.source() == QUrl.fromLocalFile(str(docs / "window.md"))
    assert "install-desktop-entry" in browser.toPlainText()
    # the screenshot of Getting started, relative to the page (../resources/), is loaded
    pages.setCurrentRow(titles.index("Getting started"))
    assert about.fit_images(browser.document(), 100) == 1
    # a link between pages is followed in place, and the list follows it
    dialog.follow(QUrl("faults.md#what-is-exact-and-why"))
    assert browser.source().toLocalFile() == str(docs / "faults.md")
    assert titles[pages.currentRow()] == "Faults and recovery"
    assert "In-memory snapshots" in browser.toPlainText()
    # anything else (a web page, an example module) goes to the system, not into the browser
    opened = []
    monkeypatch.setattr(about.QDesktopServices, "openUrl", opened.append)
    dialog.follow(QUrl("../resources/examples/functional_dropout.py"))
    dialog.follow(QUrl("https://www.mkdocs.org/"))
    assert [url.toString() for url in opened] == [
        QUrl.fromLocalFile(str(docs.parent / "resources/examples/functional_dropout.py"))
        .toString(), "https://www.mkdocs.org/"]
    assert browser.source().toLocalFile() == str(docs / "faults.md")


def test_documentation_without_the_docs_folder_shows_the_readme(monkeypatch, tmp_path,
                                                                qtbot):
    from ftgui.qt.window import about

    monkeypatch.setattr(about, "DOCS", tmp_path / "docs")  # an installed wheel has no docs/
    dialog = about.DocumentationDialog()
    qtbot.addWidget(dialog)
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    assert dialog.pages == [] and dialog.page_list.isHidden()
    assert readme.splitlines()[0].lstrip("# ") in dialog.browser.toPlainText()


def test_doc_pages_follow_the_nav_and_leave_out_missing_files(tmp_path):
    from ftgui.qt.window import about

    docs = tmp_path / "docs"
    (docs / "notes").mkdir(parents=True)
    for name in ("index.md", "b.md", "notes/c.md"):
        (docs / name).write_text("# x\n")
    mkdocs = tmp_path / "mkdocs.yml"
    mkdocs.write_text("site_name: x\nnav:\n  - Home: index.md\n  - Gone: gone.md\n"
                      "  - Notes:\n      - Sea: notes/c.md\n  - Bee: b.md\n")
    assert about.doc_pages(docs, mkdocs) == [("Home", docs / "index.md"),
                                             ("Sea", docs / "notes" / "c.md"),
                                             ("Bee", docs / "b.md")]
    assert about.doc_pages(tmp_path / "none", mkdocs) == []


def test_documentation_falls_back_to_the_readme_in_the_package_metadata(monkeypatch,
                                                                        tmp_path):
    from ftgui.qt.window import about

    monkeypatch.setattr(about, "README", tmp_path / "README.md")  # an installed wheel
    text, folder = about.readme()
    assert folder is None
    assert text == metadata.metadata("ftgui").get_payload()
    assert text.startswith("# ftgui")


def test_quit_is_ctrl_q_and_closes_an_idle_window_without_asking(make_window, monkeypatch):
    window = make_window()
    monkeypatch.setattr(QuitGuard, "choose", lambda self: pytest.fail("asked while idle"))
    quit_action = window.findChild(object, "quitAction")
    assert quit_action.shortcut() == QKeySequence("Ctrl+Q")
    quit_action.trigger()
    assert not window.isVisible()


def test_cancel_keeps_the_window_and_a_remembered_answer_is_not_asked_again(
        make_window, monkeypatch):
    monkeypatch.setattr(QuitGuard, "training", lambda self: True)  # as if a run trained
    asked = []

    def answer(choice, remember):
        def choose(self):
            asked.append(choice)
            return choice, remember
        return choose

    window = make_window()
    monkeypatch.setattr(QuitGuard, "choose", answer(quit_guard.CANCEL, True))
    window.close()
    assert window.isVisible() and asked == ["cancel"]
    assert window.quit_guard.remembered() == ""  # Cancel is never remembered

    monkeypatch.setattr(QuitGuard, "choose", answer(KILL, True))
    window.close()
    assert not window.isVisible() and asked == ["cancel", "kill"]
    assert window.quit_guard.outcome == "killed"

    again = make_window()  # the next start: the answer is remembered
    assert again.quit_guard.remembered() == KILL and again.quit_guard.forget_action.isVisible()
    again.close()
    assert not again.isVisible() and asked == ["cancel", "kill"]

    third = make_window()
    third.quit_guard.forget_action.trigger()
    assert third.quit_guard.remembered() == ""
    assert not third.quit_guard.forget_action.isVisible()
    monkeypatch.setattr(QuitGuard, "choose", answer(quit_guard.CANCEL, False))
    third.close()
    assert third.isVisible() and asked == ["cancel", "kill", "cancel"]
    monkeypatch.setattr(QuitGuard, "training", lambda self: False)


def test_a_signal_quits_with_its_answer_without_asking(make_window, monkeypatch):
    monkeypatch.setattr(QuitGuard, "training", lambda self: True)
    monkeypatch.setattr(QuitGuard, "choose", lambda self: pytest.fail("asked"))
    window = make_window()
    with pytest.raises(ValueError, match="choice: 'cancel'"):
        window.quit_guard.quit_with(quit_guard.CANCEL)
    window.quit_guard.quit_with(KILL)  # Ctrl+C in the terminal
    assert not window.isVisible() and window.quit_guard.outcome == "killed"
    assert window.quit_guard.remembered() == ""  # nothing is remembered for next time
    monkeypatch.setattr(QuitGuard, "training", lambda self: False)


@pytest.mark.tf
def test_preempt_and_quit_saves_the_step_reached_and_resume_loses_none(
        make_window, qtbot, monkeypatch, tmp_path):
    run_dir = tmp_path / "run"
    window = make_window()
    window.panel.run_dir_edit.setText(str(run_dir))
    window.panel.run_dir_edit.editingFinished.emit()
    # checkpoints every 1000 steps: the one the quit leaves can only be the preemption's
    # with automatic recovery on, which must not restart what the quit stops
    window.panel.set_config(RunConfig(steps=3000, checkpoint_every=1000, max_restarts=3))
    assert window.start_run()
    controller = window.controller
    qtbot.waitUntil(lambda: controller.timeline.last_step >= 25, timeout=180_000)
    monkeypatch.setattr(QuitGuard, "choose", lambda self: (PREEMPT, False))

    window.close()  # asks, preempts, waits for the trainer, then closes
    assert window.isVisible() and window.quit_guard.progress.isVisible()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=180_000)
    assert window.quit_guard.outcome == "preempted"

    history = events.read_all(run_dir)
    reached = max(e["step"] for e in history if e["event"] == "step")
    [exit_event] = [e for e in history if e["event"] == "process_exited"]
    assert exit_event["exit_code"] == 42 and exit_event["last_step"] == reached
    assert not [e for e in history if e["event"] == "recovery_scheduled"]
    assert listing.newest_valid(run_dir).step == reached
    assert reached % 1000 != 0
    assert runs.summarize(run_dir).status == "preempted"

    assert cli.main(["train", str(run_dir), "--resume", "--steps", str(reached + 3),
                     "--quiet"]) == 0
    history = events.read_all(run_dir)
    [resumed] = [e for e in history if e["event"] == "resumed"]
    assert resumed["from_step"] == reached
    resumed_steps = [e["step"] for e in history if e["event"] == "step" and e["attempt"] == 1]
    assert resumed_steps == [reached + 1, reached + 2, reached + 3]


@pytest.mark.tf
def test_a_trainer_that_does_not_stop_is_killed_when_the_wait_runs_out(
        make_window, qtbot, monkeypatch, tmp_path):
    run_dir = tmp_path / "run"
    window = make_window()
    window.panel.run_dir_edit.setText(str(run_dir))
    window.panel.run_dir_edit.editingFinished.emit()
    window.panel.set_config(RunConfig(steps=3000, checkpoint_every=1000))
    assert window.start_run()
    controller = window.controller
    qtbot.waitUntil(lambda: controller.timeline.last_step >= 5, timeout=180_000)
    pids = [p.pid for p in controller.supervisor.processes]
    assert controller.freeze("chief")  # a hung trainer: SIGTERM stays pending
    monkeypatch.setattr(quit_guard, "PREEMPT_TIMEOUT_S", 1.0)
    monkeypatch.setattr(QuitGuard, "choose", lambda self: (PREEMPT, False))

    window.close()
    assert window.isVisible()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=60_000)
    assert window.quit_guard.outcome == "timed out"
    assert controller.supervisor.state == "stopped"
    assert runs.summarize(run_dir).status == "stopped"
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"
                   for pid in pids)


def test_without_a_screen_the_quit_question_answers_kill_instead_of_blocking(make_window):
    window = make_window()
    # offscreen (tests, CI): a modal question would wait forever for a click
    assert window.quit_guard.choose() == (KILL, False)
