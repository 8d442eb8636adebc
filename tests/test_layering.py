"""The layering rules as import-linter contracts (pyproject's [tool.importlinter]): they hold for
the package as it is, and a deliberate violation breaks them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = ("import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(no_cache=True, no_logo=True))")


def lint(folder: Path) -> subprocess.CompletedProcess:
    """`lint-imports` run in `folder` (its pyproject.toml, its ftgui package)."""
    return subprocess.run([sys.executable, "-c", LINT], cwd=folder, capture_output=True,
                          text=True, encoding="utf-8", timeout=120)


def copy_of_package(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(ROOT / "ftgui", tmp_path / "ftgui",
                    ignore=shutil.ignore_patterns("__pycache__", "resources"))
    return tmp_path


def test_the_package_keeps_every_contract():
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 kept, 0 broken" in result.stdout


def test_core_importing_qt_inside_a_function_breaks_the_core_contract(tmp_path):
    folder = copy_of_package(tmp_path)
    (folder / "ftgui" / "core" / "sneaky.py").write_text(
        '"""A deliberate violation."""\n\n'
        'def window():\n    import pyqtgraph\n    return pyqtgraph\n',
        encoding="utf-8")
    result = lint(folder)
    assert result.returncode == 1
    assert "core imports neither Qt nor TensorFlow" in result.stdout
    assert "ftgui.core.sneaky -> pyqtgraph" in result.stdout
    assert "1 broken" in result.stdout


def test_a_view_importing_the_training_package_breaks_the_qt_contract(tmp_path):
    folder = copy_of_package(tmp_path)
    (folder / "ftgui" / "qt" / "sneaky.py").write_text(
        '"""A deliberate violation."""\n\nfrom ftgui.training import step\n', encoding="utf-8")
    result = lint(folder)
    assert result.returncode == 1
    assert "the Qt views never import TensorFlow" in result.stdout
    assert "ftgui.qt.sneaky -> ftgui.training" in result.stdout


def test_settings_importing_the_supervisor_inside_a_function_breaks_core_s_layers(tmp_path):
    folder = copy_of_package(tmp_path)
    (folder / "ftgui" / "core" / "settings" / "sneaky.py").write_text(
        '"""A deliberate violation: a lower room importing a higher one."""\n\n'
        'def supervisor():\n    from ftgui.core.supervision import supervisor\n'
        '    return supervisor\n', encoding="utf-8")
    result = lint(folder)
    assert result.returncode == 1
    assert "core's rooms, top to bottom" in result.stdout
    assert "ftgui.core.settings.sneaky -> ftgui.core.supervision.supervisor" in result.stdout
    assert "then the table model, then the theme KEPT" in result.stdout  # qt's layers hold


def test_two_modules_of_one_room_importing_each_other_break_the_acyclic_contract(tmp_path):
    folder = copy_of_package(tmp_path)
    record = folder / "ftgui" / "core" / "record"
    (record / "sneaky_a.py").write_text(
        '"""One half of a cycle."""\n\nfrom ftgui.core.record import sneaky_b\n', encoding="utf-8")
    (record / "sneaky_b.py").write_text(
        '"""The other half, hidden in a function."""\n\n'
        'def other():\n    from ftgui.core.record import sneaky_a\n    return sneaky_a\n',
        encoding="utf-8")
    result = lint(folder)
    assert result.returncode == 1
    assert "no import cycle between sibling packages or modules, at any depth BROKEN" in (
        result.stdout)
    assert "- .sneaky_b -> .sneaky_a (1 import)" in result.stdout  # the import to remove
    assert "5 kept, 1 broken" in result.stdout
