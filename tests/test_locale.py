"""Any locale: `ftgui train` under a C or cp1252 console prints ASCII look-alikes and exits as it
would under UTF-8; every file ftgui writes is UTF-8 whatever the locale."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ftgui import streams

FTGUI = Path(__file__).resolve().parent.parent / "ftgui"

C_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
            "PYTHONIOENCODING": ""}
CP1252 = {"PYTHONIOENCODING": "cp1252", "PYTHONUTF8": "0"}


def ftgui_under(environment: dict, *args) -> subprocess.CompletedProcess:
    """`python -m ftgui ARGS` with `environment` over this one; output read as bytes, so that
    the test sees exactly what the console got."""
    env = {**os.environ, **environment}
    env = {k: v for k, v in env.items() if v != ""}
    return subprocess.run([sys.executable, "-m", "ftgui", *map(str, args)], env=env,
                          capture_output=True, check=False)


def test_a_character_the_console_lacks_becomes_its_ascii_look_alike():
    text = "killed at step 15 → restored · 5 steps redone … ✓ ✗ é"
    assert text.encode("ascii", streams.ERRORS) == (
        b"killed at step 15 -> restored - 5 steps redone ... ok x \\xe9")
    # cp1252 has the middle dot and the ellipsis: only → ✓ ✗ are replaced
    assert text.encode("cp1252", streams.ERRORS) == (
        "killed at step 15 -> restored · 5 steps redone … ok x é".encode("cp1252"))


@pytest.mark.parametrize("environment", [C_LOCALE, CP1252], ids=["C", "cp1252"])
def test_a_refusal_and_the_help_reach_a_non_utf8_console(tmp_path,
                                                                           environment):
    done = ftgui_under(environment, "train", tmp_path / "run", "--from-step", "3")
    assert done.returncode == 2
    assert done.stderr == b"ftgui: from_step: --from-step needs --resume\n"
    done = ftgui_under(environment, "--help")
    assert (done.returncode, done.stderr) == (0, b"")
    assert b"in the presentation view (View -> Presentation, F5)" in b" ".join(
        done.stdout.split())


def _text_file_calls_without_encoding(path: Path) -> list[str]:
    """`open(…)`, `Path.open/read_text/write_text(…)` in text mode and `subprocess` calls with
    `text=True` in `path` that name no encoding (the locale's would be used)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or any(k.arg == "encoding" for k in node.keywords):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        modes = [a.value for a in node.args if isinstance(a, ast.Constant)]
        modes += [k.value.value for k in node.keywords
                  if k.arg == "mode" and isinstance(k.value, ast.Constant)]
        binary = any(isinstance(m, str) and "b" in m for m in modes)
        if isinstance(func, ast.Name) and name == "open" and not binary:
            found.append(f"{path.name}:{node.lineno} open()")
        elif isinstance(func, ast.Attribute) and name in ("read_text", "write_text"):
            found.append(f"{path.name}:{node.lineno} {name}()")
        elif (isinstance(func, ast.Attribute) and name == "open" and not binary
              and (modes or not node.args) and getattr(func.value, "id", None) != "os"):
            found.append(f"{path.name}:{node.lineno} .open()")  # Path.open(), text mode
        elif name in ("run", "Popen", "check_output") and any(
                k.arg in ("text", "universal_newlines") for k in node.keywords):
            found.append(f"{path.name}:{node.lineno} {name}(text=True)")
    return found


def test_every_text_file_ftgui_opens_names_its_encoding():
    found = [hit for path in sorted(FTGUI.rglob("*.py"))
             for hit in _text_file_calls_without_encoding(path)]
    assert found == []


def test_the_scan_sees_a_text_open_without_encoding(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("open(p, 'w')\nopen(p, 'rb')\nopen(p, encoding='utf-8')\n"
                      "p.write_text(t)\np.open()\nos.open(p, 1)\n"
                      "subprocess.run(a, text=True)\n", encoding="utf-8")
    assert _text_file_calls_without_encoding(sample) == [
        "sample.py:1 open()", "sample.py:4 write_text()", "sample.py:5 .open()",
        "sample.py:7 run(text=True)"]


@pytest.mark.tf
@pytest.mark.parametrize(("environment", "encoding"), [(C_LOCALE, "ascii"), (CP1252, "cp1252")],
                         ids=["C", "cp1252"])
def test_a_run_with_an_incident_finishes_under_a_non_utf8_console(tmp_path, environment,
                                                                  encoding):
    done = ftgui_under(environment, "train", tmp_path / "run", "--steps", "30",
                       "--checkpoint-every", "10", "--kill-at-step", "15", "--auto-recover",
                       "--snapshot-every", "0")  # recovery from disk
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert b"Traceback" not in done.stderr
    lines = done.stdout.decode(encoding).splitlines()  # only what the console can show
    assert lines[-1].startswith("finished: step 30 of 30, final loss ")
    story = lines[-2]
    assert story.startswith("Finished at step 30 ")
    assert "killed at step 15 -> restored checkpoint 10 -> resumed: 5 steps redone" in story


@pytest.mark.tf
def test_a_users_error_in_non_ascii_text_is_one_line_and_check_log_is_utf8(tmp_path):
    model = tmp_path / "layers.py"
    model.write_text("def build(input_shape, num_classes):\n"
                     "    raise ValueError('Schichtgröße → 0 ist ungültig')\n",
                     encoding="utf-8")
    run = tmp_path / "run"
    done = ftgui_under(C_LOCALE, "train", run, "--steps", "5", "--model", f"{model}:build")
    assert done.returncode == 2
    assert b"Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert b"ValueError: Schichtgr\\xf6\\xdfe -> 0 ist ung\\xfcltig" in done.stderr
    log = (run / "logs" / "check.log").read_text(encoding="utf-8")
    assert "ValueError: Schichtgröße → 0 ist ungültig" in log


@pytest.mark.tf
def test_a_run_folder_with_a_non_ascii_name_trains_under_a_c_locale(tmp_path):
    """The trainer is started in Python's UTF-8 mode: it decodes the folder's name from its
    command line as UTF-8 (the C locale would make it ASCII with escapes TensorFlow refuses)."""
    run = tmp_path / "Läufe" / "rün"
    done = ftgui_under(C_LOCALE, "train", run, "--steps", "3", "--checkpoint-every", "1")
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert done.stdout.decode("ascii").splitlines()[-1].startswith(
        "finished: step 3 of 3, final loss ")
    assert (run / "checkpoints" / "ckpt-3.index").is_file()
