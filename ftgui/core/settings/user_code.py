"""The user's own model and dataset: what a source names, its fingerprint, and the check.

A model is `mlp`, `cnn`, `resnet`, `PATH.py:FUNCTION` (`FUNCTION(input_shape, num_classes)`
returns an uncompiled Keras model giving logits (batch, num_classes), or (batch, k) for
regression) or `PATH.keras` (a saved model; its weights are the starting point). A dataset is
`digits`, `synthetic`, `PATH.npz` (arrays x, y) or `PATH.py:FUNCTION` (returns numpy
`(x_train, y_train)` or `(x_train, y_train, x_val, y_val)`).

The check imports the user's code, so it runs in a helper process
(`python -m ftgui.training.helpers.check_user_code`), never here: `check()` starts it and parses its
JSON answer. The GUI process imports this module, never TensorFlow nor the user's module.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ftgui.child_python import module_argv
from ftgui.core import formatting
from ftgui.core.settings import local_imports
from ftgui.core.settings.schema import BUILTIN_DATASETS, MODELS, ConfigError
from ftgui.streams import CHILD_ENV

CHECK_LOG = "check.log"  # RUN/logs/check.log: the full traceback of a refused check
BUILTIN_MODELS = MODELS
RECORD_TABLE = "user_code"  # the table of RUN/config.toml holding the record


class UserCodeError(ConfigError):
    """The user's model or dataset cannot train; the message is one line naming the file
    (and line, where the traceback has one)."""


@dataclass(frozen=True)
class Source:
    """What a model or dataset setting names: `kind` is builtin, python, keras or npz;
    `path` the file (None for a built-in), `function` the function of a python source."""

    text: str
    kind: str
    path: Path | None = None
    function: str = ""


def parse(name: str, text: str) -> Source:
    """Parse setting `name` (`model` or `dataset`) into a `Source`. Raises `ConfigError`
    naming the field when the form is wrong, the file is missing or FUNCTION is no identifier."""
    builtins = BUILTIN_MODELS if name == "model" else BUILTIN_DATASETS
    if text in builtins:
        return Source(text, "builtin")
    path_text, colon, function = text.rpartition(":") if ".py:" in text else (text, "", "")
    if colon:
        if not function.isidentifier():
            raise ConfigError(f"{name}: {function!r} in {text!r} is not a Python function name")
        kind, path = "python", Path(path_text)
    elif text.endswith(".py"):
        raise ConfigError(f"{name}: {text!r} names no function; use {text}:FUNCTION")
    elif name == "model" and text.endswith(".keras"):
        kind, path = "keras", Path(text)
    elif name == "dataset" and text.endswith(".npz"):
        kind, path = "npz", Path(text)
    else:  # every form allowed, the files' too: a user typed "transformer", "mnist"
        suffix = ".keras" if name == "model" else ".npz"
        raise ConfigError(f"{name}: {text!r} is not one of {', '.join(builtins)}, "
                          f"PATH.py:FUNCTION or FILE{suffix}")
    if not path.is_file():
        raise ConfigError(f"{name}: file {str(path)!r} does not exist")
    names = bound_names(path) if kind == "python" else None
    if names is not None and function not in names and "__getattr__" not in names:
        close = difflib.get_close_matches(function, sorted(names), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"{name}: {path} defines no function {function!r}{hint}")
    return Source(text, kind, path, function)


_BOUND: dict[tuple[str, int, int], frozenset[str] | None] = {}  # (path, mtime ns, size)


def bound_names(path: Path) -> frozenset[str] | None:
    """The names Python file `path` binds at its top level (functions, classes, assignments,
    imports, also inside a top-level if/try/with), read without running it: a misspelt
    function is refused at once, not after a helper process imported TensorFlow. None when
    it cannot be read or parsed (the helper then names the problem with its line), or when a
    star import binds names no reading can list. Read once per modification time and size."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    key = (os.fspath(Path(path).absolute()), stat.st_mtime_ns, stat.st_size)
    if key not in _BOUND:
        try:
            tree = ast.parse(Path(path).read_bytes())
        except (OSError, SyntaxError, ValueError):
            _BOUND[key] = None
        else:
            _BOUND[key] = _names_bound_in(tree.body)
    return _BOUND[key]


def _names_bound_in(body: list) -> frozenset[str] | None:
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "*" for alias in node.names):
                return None
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            blocks = [node.body, getattr(node, "orelse", []), getattr(node, "finalbody", []),
                      *[handler.body for handler in getattr(node, "handlers", [])]]
            for block in blocks:
                inner = _names_bound_in(block)
                if inner is None:
                    return None
                names.update(inner)
    return frozenset(names)


def absolute(text: str) -> str:
    """`text` with its file made absolute, so that config.toml names the file from any working
    directory. A built-in name, and any text in none of the file forms (PATH.py:FUNCTION,
    PATH.keras, PATH.npz), is returned unchanged, so that `parse` names it as it was typed."""
    if text in BUILTIN_MODELS or text in BUILTIN_DATASETS or not _names_a_file(text):
        return text
    path_text, colon, function = text.rpartition(":") if ".py:" in text else (text, "", "")
    return f"{Path(path_text).absolute()}{colon}{function}"


def _names_a_file(text: str) -> bool:
    return ".py:" in text or text.endswith((".py", ".keras", ".npz"))


def is_user_code(config) -> bool:
    """True when the run's model or dataset is the user's Python code or a saved model (the
    cases the helper process must check before training)."""
    return (config.model not in BUILTIN_MODELS
            or config.dataset.partition(".py:")[1] == ".py:")


_HASHED: dict[tuple[str, int, int], str] = {}  # (path, mtime ns, size) -> hex digest


def sha256(path: Path) -> str:
    """Hex SHA-256 of a file's content. Computed once per path, modification time and size in
    this process (a start hashes the model and dataset files for its record, the resume
    check and the user-code check's key: a dataset of gigabytes is read once). Raises
    `OSError`."""
    stat = os.stat(path)
    key = (os.fspath(Path(path).absolute()), stat.st_mtime_ns, stat.st_size)
    if key not in _HASHED:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _HASHED[key] = digest.hexdigest()
    return _HASHED[key]


def code_fingerprint(config) -> dict:
    """`model_source`, `model_sha256`, `dataset_source`, `dataset_sha256` of the files a run
    trains from (only those that are files), and `model_modules` / `dataset_modules` ({module
    name: SHA-256}, only when there are any) of the user's own modules a Python file imports
    (`local_imports.module_hashes`): what config.toml and each checkpoint record."""
    record = {}
    for name in ("model", "dataset"):
        source = parse(name, getattr(config, name))
        if source.path is not None:
            record[f"{name}_source"] = str(source.path.absolute())
            record[f"{name}_sha256"] = sha256(source.path)
            modules = local_imports.module_hashes(source.path) if source.kind == "python" else {}
            if modules:
                record[f"{name}_modules"] = modules
    return record


def resume_problem(config, meta: dict) -> str:
    """Why a checkpoint with metadata `meta` must not be resumed with `config`'s files ('' when
    it may). Any change of a model or dataset file's content refuses: ftgui cannot tell a change
    of comments from one of the math or the variables, and either would break exact resume."""
    for name in ("model", "dataset"):
        recorded = meta.get(f"{name}_sha256")
        source = parse(name, getattr(config, name))
        if recorded is None or source.path is None:
            continue
        if sha256(source.path) != recorded:
            return (f"{name}: {source.path} changed since checkpoint step {meta.get('step')} was "
                    f"saved (content hash differs); restore the file or start a new run")
        problem = _modules_problem(name, source.path, meta)
        if problem:
            return problem
    return ""


def data_changed(config, meta: dict, actual: str) -> str:
    """The refusal of a resume whose dataset function returned data of fingerprint `actual`
    ('' when it is the one the checkpoint with metadata `meta` recorded, or it recorded none)."""
    recorded = (meta.get("dataset_info") or {}).get("fingerprint")
    if ".py:" not in config.dataset or not recorded or not actual or recorded == actual:
        return ""
    return (f"dataset: {config.dataset} returned other data than checkpoint step "
            f"{meta.get('step')} was trained on (fingerprint {recorded[:12]}, now {actual[:12]}); "
            "restore what it reads, or start a new run")


def fork_data_problem(config, meta: dict, python: str = sys.executable) -> str:
    """`data_changed` for a dataset function, asked before a fork moves any checkpoint: the
    function runs in a helper process (`ftgui.training.helpers.data_fingerprint`, no
    TensorFlow). '' when there is nothing to compare; the helper's one line when the function
    fails."""
    if ".py:" not in config.dataset or not (meta.get("dataset_info") or {}).get("fingerprint"):
        return ""
    done = subprocess.run(
        [*module_argv("ftgui.training.helpers.data_fingerprint", python), config.dataset,
         config.task, str(config.seed)], capture_output=True, encoding="utf-8", errors="replace",
        env={**os.environ, **CHILD_ENV}, check=False)
    answer = _last_json(done.stdout) or {}
    if "fingerprint" not in answer:
        return f"dataset: {config.dataset}: {answer.get('error') or 'its function failed'}"
    return data_changed(config, meta, answer["fingerprint"])


def _modules_problem(name: str, path: Path, meta: dict) -> str:
    """Why the user's own modules `path` imports are not those the checkpoint recorded ('' when
    they are, or when it recorded none: a checkpoint from before they were recorded)."""
    recorded = meta.get(f"{name}_modules")
    if not isinstance(recorded, dict) or not recorded:
        return ""
    now = local_imports.module_hashes(path)
    for module, digest in sorted(recorded.items()):
        if now.get(module) != digest:
            how = "is gone" if module not in now else "changed"
            return (f"{name}: module {module!r} that {path.name} imports {how} since checkpoint "
                    f"step {meta.get('step')} was saved; restore it or start a new run")
    return ""


def import_module(path: Path):
    """Import the user's Python file `path` as a fresh module (not cached in `sys.modules`
    under its own name), with the working directory and then the file's folder on `sys.path`
    right after the standard library (`user_folders_on_path`). Only in a training or helper
    process: it runs the user's code."""
    user_folders_on_path(Path(path).absolute().parent)
    name = f"ftgui_user_{path.stem}_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up
    spec.loader.exec_module(module)
    return module


def user_folders_on_path(folder: Path) -> None:
    """Put the working directory and `folder` (a model or dataset file's) on `sys.path`, in
    that order, after the standard library and before the installed packages, unless already
    there: the user's own modules import from both, as in `python FILE` (whose folder comes
    first) — but a user's `json.py` or `code.py` never stands in for the standard module that
    TensorFlow imports (ftgui starts its trainers with `python -P`: `ftgui.child_python`)."""
    for entry in (os.getcwd(), os.fspath(folder)):
        real = os.path.realpath(entry)
        if real in {os.path.realpath(e or os.curdir) for e in sys.path}:
            continue
        added = [i for i, e in enumerate(sys.path) if e in _ADDED]  # after those added before:
        sys.path.insert(max(added) + 1 if added else _after_standard_library(), entry)
        _ADDED.add(entry)  # the working directory stays ahead of every file's folder


_ADDED: set[str] = set()  # the folders `user_folders_on_path` put on sys.path


def _after_standard_library() -> int:
    """The index in `sys.path` just after its last standard-library entry (the zip, the
    library, `lib-dynload`); 0 when there is none."""
    roots = {os.path.realpath(sysconfig.get_path(key)) for key in ("stdlib", "platstdlib")}
    last = -1
    for index, entry in enumerate(sys.path):
        real = os.path.realpath(entry or os.curdir)
        in_library = any(real == root or real.startswith(root + os.sep) for root in roots)
        zipped = entry.endswith(".zip") and os.path.basename(entry).startswith("python")
        if (in_library and "site-packages" not in real) or zipped:
            last = index
    return last + 1


def user_function(source: Source):
    """The function a python `Source` names. Raises `AttributeError` naming file and function."""
    module = import_module(source.path)
    function = getattr(module, source.function, None)
    if not callable(function):
        raise AttributeError(f"{source.path} defines no function {source.function!r}")
    return module, function


@dataclass
class CheckResult:
    """The helper process' verdict on a run's user code.

    `summary`: model name, `layers` [(name, class, output shape, parameters)], `parameters`
    (total count), dataset sizes. `deterministic` False means exact resume cannot be promised;
    `nondeterministic_ops` then names the TensorFlow ops found to be the cause, `reason` says it
    in a sentence. `advice`: lines for a model that trains, but not as its author meant
    (outputs already probabilities, a compile() the run does not use, a step that changes
    when traced again, a copy of the model that validates differently), each naming the file.
    `trace_dependent`: the step traced a second time gave other results.
    """

    summary: dict = field(default_factory=dict)
    deterministic: bool = True
    nondeterministic_ops: list[str] = field(default_factory=list)
    reason: str = ""
    advice: list[str] = field(default_factory=list)
    trace_dependent: bool = False

    @classmethod
    def from_answer(cls, answer: dict) -> CheckResult:
        """The result in the helper's JSON answer (or a kept one). Raises `KeyError`."""
        return cls(answer["summary"], answer["deterministic"], answer["nondeterministic_ops"],
                   answer["reason"], list(answer.get("advice", [])),
                   bool(answer.get("trace_dependent", False)))

    def record(self) -> dict:
        """The `user_code` table of config.toml (without the fingerprint); `trace_dependent`:
        the step traced again gave other results, so the trainer's warm standby does not
        trace before its order (`ftgui.training.__main__._prepare`)."""
        return {"exact_resume": self.deterministic,
                "nondeterministic_ops": list(self.nondeterministic_ops),
                "determinism_reason": self.reason, "trace_dependent": self.trace_dependent}

    def summary_line(self) -> str:
        """One line: the model's name, layers and parameters."""
        s = self.summary
        return (f"model {s.get('name', '?')}: {len(s.get('layers', []))} layers, "
                f"{formatting.count(s.get('parameters', 0))} parameters; "
                f"data {formatting.count(s.get('train', 0))} training / "
                f"{formatting.count(s.get('val', 0))} validation examples, "
                f"input {tuple(s.get('input_shape', ()))}")


# Settings the check does not read (run length, checkpoint cadence, faults, recovery, where
# the processes run): a passed check stays valid when only these change. Any other setting,
# including one added later, is part of the cache key.
NOT_CHECKED = frozenset({
    "steps", "checkpoint_every", "keep", "pace", "auto_recover", "max_restarts",
    "restart_backoff", "warm_standby", "standbys_per_task", "max_standbys", "kill_at_step",
    "preempt_at_step", "nan_at_step", "hang_at_step", "kill_in_save_at_step",
    "kill_in_snapshot_at_step", "kill_after_seconds", "watchdog_seconds", "chaos_faults",
    "chaos_kinds", "chaos_seed", "fault_target", "launcher", "slurm_partition", "slurm_nodes",
    "slurm_tasks_per_node", "slurm_time_limit", "slurm_options"})
CACHE_DIR_ENV = "FTGUI_CHECK_CACHE"  # where passed checks are kept (tests point it elsewhere)


def cache_dir() -> Path:
    """Where passed checks are kept: `$FTGUI_CHECK_CACHE`, else this user's cache folder
    (`platformdirs.user_cache_path('ftgui') / 'user-code-checks'`)."""
    from platformdirs import user_cache_path

    return Path(os.environ.get(CACHE_DIR_ENV) or user_cache_path("ftgui") / "user-code-checks")


def _trainer_fingerprint() -> str:
    """SHA-256 of every source file of the training package (what the check runs)."""
    digest = hashlib.sha256()
    for path in sorted((Path(__file__).parents[2] / "training").rglob("*.py")):
        digest.update(path.as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def cache_key(config, python: str = sys.executable) -> str:
    """The key of a check's result: the settings it reads, the content hashes of the model
    and dataset files and of the user's own modules they import, the Python that runs it and
    ftgui's training code. Raises `OSError` when a named file cannot be read."""
    checked = {k: v for k, v in config.to_dict().items() if k not in NOT_CHECKED}
    parts = {"config": checked, "files": code_fingerprint(config), "python": python,
             "trainer": _trainer_fingerprint()}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def cached(config, python: str = sys.executable) -> CheckResult | None:
    """The result of a check that passed before with the same key (`cache_key`), or None."""
    try:
        answer = json.loads((cache_dir() / f"{cache_key(config, python)}.json").read_text(
            encoding="utf-8"))
        return CheckResult.from_answer(answer)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _remember(config, python: str, answer: dict) -> None:
    """Keep a passed check's answer under its key (nothing when the folder is not writable)."""
    try:
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{cache_key(config, python)}.json"
        temporary = path.with_name(f"{path.name}.{uuid.uuid4().hex}.tmp")
        temporary.write_text(json.dumps(answer), encoding="utf-8")
        os.replace(temporary, path)
    except OSError:
        pass


def check(config, run_dir: Path, python: str = sys.executable) -> CheckResult:
    """Check the run's user code in a helper process (imports, shapes and dtypes, outputs,
    build under the strategy, one step twice from the same state), unless the same check
    passed before (`cached`: same settings, files and trainer); a passed check is kept.

    Raises `UserCodeError` (one line naming the user's file and line) when the code cannot
    train; its full traceback is then in `RUN/logs/check.log`, the only file written in RUN.
    A refusal is never kept. Takes seconds (the helper imports TensorFlow) unless cached.
    """
    known = cached(config, python)
    if known is not None:
        return known
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **CHILD_ENV, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        [*module_argv("ftgui.training.helpers.check_user_code", python),
         json.dumps(config.to_dict())],
        capture_output=True, encoding="utf-8", errors="replace", env=env, check=False,
    )
    answer = _last_json(done.stdout)
    if done.returncode == 0 and answer is not None and answer.get("ok"):
        _remember(config, python, answer)
        return CheckResult.from_answer(answer)
    error = (answer or {}).get("error") or _fallback_error(done)
    error += _hidden_hint(config)
    log = Path(run_dir) / "logs" / CHECK_LOG
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"{error}\n\n{(answer or {}).get('traceback', '')}\n"
                   f"--- helper stderr ---\n{done.stderr}", encoding="utf-8")
    raise UserCodeError(error)


def _hidden_hint(config) -> str:
    """For a refusal: the user's own files that a model or dataset file imports by a standard
    module's name, which Python's module stands in for ('' when there are none)."""
    hidden = []
    for name in ("model", "dataset"):
        source = parse(name, getattr(config, name))
        if source.path is not None and source.kind == "python":
            hidden += local_imports.hidden_standard_modules(source.path)
    if not hidden:
        return ""
    names = ", ".join(str(path) for path in dict.fromkeys(hidden))
    return (f" (note: {names} is not imported: Python's standard module of that name comes "
            f"first; rename it)")


def _last_json(stdout: str) -> dict | None:
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _fallback_error(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    tail = lines[-1] if lines else f"exit status {done.returncode}"
    return f"user code check failed: {tail}"


def check_start(config, run_dir: Path, restore=None, fork: bool = False) -> CheckResult | None:
    """What a start of the run needs before any process: a resume (`restore`, a checkpoint
    info with `.meta`) is refused when a recorded file changed, and a fork (`fork`: it moves
    the newer checkpoints aside) also when a dataset function now returns other data
    (`fork_data_problem`); user code is checked in the helper process (`check`). Returns its
    result, or None for built-ins only. Raises `UserCodeError`."""
    if restore is not None:
        meta = getattr(restore, "meta", {}) or {}
        problem = resume_problem(config, meta) or (fork and fork_data_problem(config, meta))
        if problem:
            raise UserCodeError(problem)
    if not is_user_code(config):
        return None
    return check(config, run_dir)


def record(config, result: CheckResult | None) -> dict:
    """The `[user_code]` table of config.toml: the files' paths and hashes and, after a check,
    whether exact resume is promised ({} for built-ins only)."""
    values = code_fingerprint(config)
    if result is not None:
        values.update(result.record())
    return values


def warning_line(result: CheckResult) -> str:
    """The line the CLI and the window show when exact resume cannot be promised."""
    return f"warning: exact resume is not guaranteed for this model: {result.reason}"
