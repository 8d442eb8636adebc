"""The quick suite (`pytest -m "not tf"`) imports no TensorFlow: its guard in conftest.py
fails the test that did, and the run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

IMPORTS_TENSORFLOW = '''
import sys

import pytest
import types


def test_clean_before():
    pass


def test_imports_tensorflow():
    sys.modules["tensorflow"] = types.ModuleType("tensorflow")  # as `import tensorflow` would


def test_clean_after():
    pass
'''


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess:
    # without plugins the sample does not need (hypothesis and pytest-qt cost seconds here)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:hypothesispytest", "-p", "no:pytestqt",
                           *args, str(folder)], cwd=folder, capture_output=True, text=True)


def test_a_quick_test_that_imports_tensorflow_fails_and_is_named(tmp_path):
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_sample.py").write_text(IMPORTS_TENSORFLOW)

    quick = _pytest(tmp_path, "-m", "not tf")
    full = _pytest(tmp_path)  # the whole suite may import it

    assert quick.returncode == 1, quick.stdout
    assert "3 passed, 1 error" in quick.stdout
    assert ("test_sample.py::test_imports_tensorflow imported tensorflow: "
            "mark it tf or import less") in quick.stdout
    assert 'error: tensorflow was imported in a -m "not tf" run' in quick.stdout
    assert full.returncode == 0, full.stdout
    assert "3 passed" in full.stdout


IMPORTS_TENSORFLOW_WHILE_COLLECTED = '''
import sys

import pytest
import types

sys.modules["tensorflow"] = types.ModuleType("tensorflow")  # a module-level `import tensorflow`


def test_clean():
    pass
'''


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "two xdist workers"])
def test_a_quick_suite_that_imports_tensorflow_while_collecting_fails(tmp_path, workers):
    """The guard also holds on pytest-xdist workers (pyproject's addopts use two), which
    collect the tests themselves: each worker reports the import to the controller."""
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_sample.py").write_text(IMPORTS_TENSORFLOW_WHILE_COLLECTED)

    quick = _pytest(tmp_path, "-m", "not tf", *workers)

    assert "1 passed" in quick.stdout, quick.stdout
    assert 'error: tensorflow was imported in a -m "not tf" run' in quick.stdout
    assert quick.returncode == 1, quick.stdout
