"""Arrays that cannot train are refused before any process starts (issue 25, case 10): complex
numbers, an `x` without a feature axis, a label that would mean a billion classes; in a `.npz`
(the CLI, before anything is written) and in a `PATH.py:FUNCTION` dataset's arrays (what the
user-code check helper loads)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ftgui import cli
from ftgui.training import data

ROWS = 40


def _labels():
    return np.arange(ROWS) % 4


BAD = {
    "complex": (lambda: (np.ones((ROWS, 3)) * (1 + 2j), _labels()),
                "x holds complex numbers (complex128); training needs real numbers: store the "
                "real and imaginary parts as separate features"),
    "one_d": (lambda: (np.linspace(0, 1, ROWS), _labels()),
              "x must have one row per example and a feature axis, shape (n, features…); it "
              f"has shape ({ROWS},)"),
    "huge_label": (lambda: (np.ones((ROWS, 3), np.float32),
                            np.where(np.arange(ROWS) == 7, 10**9, _labels())),
                   "y[7] is 1000000000: labels are class ids from 0 and that one would mean "
                   "1,000,000,001 classes (at most 100,000); renumber the classes 0 … N-1"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_npz_is_refused_before_anything_starts(tmp_path, capsys, case):
    make, problem = BAD[case]
    x, y = make()
    path = tmp_path / f"{case}.npz"
    np.savez(path, x=x, y=y)
    run_dir = tmp_path / "run"
    code = cli.main(["train", str(run_dir), "--dataset", str(path), "--strategy", "default",
                     "--batch-size", "8", "--quiet"])
    assert code == 2
    assert capsys.readouterr().err == f"ftgui: dataset: {path}: {problem}\n"
    assert not run_dir.exists()  # no config.toml, no events, no process


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_dataset_functions_bad_arrays_are_refused_naming_the_split(tmp_path, case):
    make, problem = BAD[case]
    module = tmp_path / "mine.py"
    module.write_text("import numpy as np\n\n\ndef load():\n"
                      f"    return np.load({str(tmp_path / 'a.npz')!r})['x'], "
                      f"np.load({str(tmp_path / 'a.npz')!r})['y']\n")
    x, y = make()
    np.savez(tmp_path / "a.npz", x=x, y=y)
    with pytest.raises(ValueError) as raised:
        data.load(f"{module}:load")
    named = problem.replace("x ", "x_train ", 1).replace("y[7]", "y_train[7]")
    assert str(raised.value) == f"dataset: mine.py:load: {named}"


def test_real_arrays_still_load(tmp_path):
    path = tmp_path / "fine.npz"
    np.savez(path, x=np.ones((ROWS, 3), np.float32), y=_labels())
    loaded = data.load(str(path))
    assert (loaded.num_classes, loaded.input_shape, len(loaded.x_train)) == (4, (3,), 32)


def test_fit_needs_a_validation_row_per_replica(tmp_path, capsys):
    path = tmp_path / "six.npz"
    np.savez(path, x=np.ones((6, 3), np.float32), y=np.arange(6) % 3)
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--loop", "fit", "--dataset", str(path),
                     "--batch-size", "2", "--replicas", "2", "--quiet"]) == 2
    assert capsys.readouterr().err == (
        f"ftgui: dataset: {path} leaves 1 validation row(s), fewer than the 2 replicas that "
        "--loop fit validates on; give it at least 10 rows or fewer replicas\n")
    assert not run_dir.exists()


REGRESSION_BAD = {  # found while trying to break issue 25's datasets
    # a NaN target was reported as being in x
    "nan_target": (np.where(np.arange(ROWS) == 3, np.nan, 1.0),
                   "y holds NaN or infinity in 1 of 40 rows (the first is row 3); remove or "
                   "fix them"),
    # text targets crashed with a ValueError traceback ('cat'), or were read as numbers ('0')
    "text_target": (np.array(["cat"] * ROWS), "y must hold numbers (it holds <U3)"),
    "digit_text_target": (np.array(["0"] * ROWS), "y must hold numbers (it holds <U1)"),
}


@pytest.mark.parametrize("case", sorted(REGRESSION_BAD))
def test_a_bad_regression_target_is_refused_naming_y(tmp_path, capsys, case):
    y, problem = REGRESSION_BAD[case]
    path = tmp_path / f"{case}.npz"
    np.savez(path, x=np.ones((ROWS, 3), np.float32), y=y)
    run_dir = tmp_path / "run"
    model = Path(__file__).resolve().parents[3] / "resources" / "examples" / "regression.py"
    code = cli.main(["train", str(run_dir), "--dataset", str(path), "--task", "regression",
                     "--model", f"{model}:build", "--strategy", "default", "--batch-size", "8",
                     "--quiet"])
    assert code == 2
    assert capsys.readouterr().err == f"ftgui: dataset: {path}: {problem}\n"
    assert not run_dir.exists()


def test_a_dataset_function_with_nan_in_its_validation_split_is_refused(tmp_path):
    """Found while trying to break issue 25: a `.py` dataset's NaN in x_val (or an x that
    overflows float32) trained, every validation loss NaN; the .npz check refused the same."""
    module = tmp_path / "mine.py"
    module.write_text(
        "import numpy as np\n\n\ndef load():\n"
        "    x = np.ones((40, 3), np.float32)\n"
        "    xv = np.ones((10, 3), np.float32)\n    xv[4, 1] = np.nan\n"
        "    return x, np.arange(40) % 4, xv, np.arange(10) % 4\n\n\n"
        "def huge():\n"
        "    return np.full((40, 3), 1e300), np.arange(40) % 4\n")
    with pytest.raises(ValueError) as raised:
        data.load(f"{module}:load")
    assert str(raised.value) == ("dataset: mine.py:load: x_val holds NaN or infinity in 1 of "
                                 "10 rows (the first is row 4); remove or fix them")
    with pytest.raises(ValueError) as raised:
        data.load(f"{module}:huge")
    assert str(raised.value) == ("dataset: mine.py:huge: x_train holds NaN or infinity in 40 "
                                 "of 40 rows (the first is row 0); remove or fix them")
