"""The resume check: what a checkpoint recorded about the run that saved it, compared with what a
resume (or fork) asks for, before any training process starts (no TensorFlow here).

Each checkpoint's metadata (`RUN/checkpoints/ckpt-N.meta.json`, built by the trainer's
`actions.checkpoint.run_record`) records the model and its variable shapes, the dataset (source,
x/y shapes, classes, a content `fingerprint`), the strategy and replicas, the global batch size,
learning rate, seed, loop, and the data position after its step (epoch, offset, examples seen).
What happens to a setting asked for again on resume is the schema's `on_resume`
(`ftgui.core.settings.schema`):

- `refused` (model, loop, dataset, seed): another value than the checkpoint's is refused in one
  line naming the setting, the checkpoint's value and the requested one (`ConfigError`); nothing
  on disk changes. A dataset is the same when its content fingerprint is (a moved file is fine).
- `applies` (learning rate, global batch size): the new value takes effect from the resume step;
  the chief records it as a `setting_changed` event (setting, old, new, step).
- `free`: run control, never compared.

Checkpoints written before these fields existed still restore: their missing settings are taken
from the run's first configuration (the `run_started` event), which is what such a run trained
with (it could not change them on resume); without that record nothing is compared.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ftgui.core.checkpoints import listing
from ftgui.core.checkpoints.listing import CheckpointInfo
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import RunConfig
from ftgui.core.settings.schema import (
    APPLIES,
    BUILTIN_DATASETS,
    FREE,
    REFUSED,
    SETTINGS,
    ConfigError,
)

COMPARED = tuple(name for name, s in SETTINGS.items() if s.on_resume in (APPLIES, REFUSED))


@dataclass(frozen=True)
class Change:
    """An `applies` setting that a resume changes: from `old` (the checkpoint's) to `new`,
    effective after global step `step` (the checkpoint's step)."""

    setting: str
    old: object
    new: object
    step: int

    def fields(self) -> dict:
        """The `setting_changed` event's fields."""
        return {"setting": self.setting, "old": self.old, "new": self.new, "step": self.step}


def dataset_fingerprint(*arrays: np.ndarray) -> str:
    """A content fingerprint of a dataset's arrays (`x`, `y` as stored, before scaling, for a
    file; a dataset function's four splits as training reads them): blake2b (16 bytes, hex)
    over each array's dtype, shape and bytes, in order."""
    digest = hashlib.blake2b(digest_size=16)
    for array in arrays:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape};".encode())
        digest.update(memoryview(array).cast("B"))
    return digest.hexdigest()


def file_fingerprint(path: str | os.PathLike) -> str:
    """`dataset_fingerprint` of the `x` and `y` arrays of an `.npz` file, computed once per process
    for each (path, size, modification time). Raises OSError / ValueError / KeyError for a
    file that cannot be read."""
    stat = Path(path).stat()
    return _file_fingerprint(str(Path(path).absolute()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _file_fingerprint(path: str, size: int, mtime_ns: int) -> str:
    with np.load(path, allow_pickle=False) as data:
        return dataset_fingerprint(data["x"], data["y"])


def first_config(run_dir: str | os.PathLike) -> dict:
    """The configuration of the run's first launch (its `run_started` event), or {} when the
    run has none. Reads only up to that event (the first lines of `RUN/events.jsonl`)."""
    try:
        with open(Path(run_dir) / "events.jsonl", "rb") as handle:
            for line in handle:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("event") == "run_started":
                    return dict(event.get("config") or {})
    except FileNotFoundError:
        pass
    return {}


def recorded_settings(run_dir: str | os.PathLike, meta: dict) -> dict:
    """The compared settings (`COMPARED`) a checkpoint was saved with: from its metadata `meta`,
    else (an older checkpoint) from the run's first configuration; absent when neither says."""
    first = None
    recorded = {}
    for name in COMPARED:
        if name in meta:
            recorded[name] = meta[name]
            continue
        if first is None:
            first = first_config(run_dir)
        if name in first:
            recorded[name] = first[name]
    return recorded


def check(run_dir: str | os.PathLike, config, restore: CheckpointInfo | None) -> list[Change]:
    """Compare `config` (a `RunConfig`) with what checkpoint `restore` recorded.

    Raises `ConfigError` for the first `refused` setting that differs, e.g. "model: checkpoint
    ckpt-60 was saved by model mlp; this run asks for cnn; …". Returns the `applies` settings
    that change (`Change`, in schema order); [] when `restore` is None. Reads files only.
    """
    if restore is None:
        # nothing saved yet: the run's first start is its record (a resume with another seed
        # trained from step 0 under the first one's run_started, two trainings in one history)
        _check_refused(first_config(run_dir), config, "the run's first start (no checkpoint "
                       "yet) trained", {})
        return []
    _check_refused(recorded_settings(run_dir, restore.meta), config,
                   f"checkpoint {restore.prefix.name} was saved",
                   restore.meta.get("dataset_info") or {})
    return changes(run_dir, config, restore)


def _check_refused(recorded: dict, config, source: str, dataset_info: dict) -> None:
    """Raise `ConfigError` for the first `refused` setting of `config` that differs from
    `recorded` (what `source` — "checkpoint ckpt-60 was saved" — trained with)."""
    for setting in COMPARED:
        if SETTINGS[setting].on_resume != REFUSED or setting not in recorded:
            continue
        old, new = recorded[setting], getattr(config, setting)
        if setting == "dataset":
            _check_dataset(source, old, new, dataset_info)
        elif old != new:
            raise ConfigError(_refusal(setting, source, old, new))


def changes(run_dir: str | os.PathLike, config, restore: CheckpointInfo) -> list[Change]:
    """The `applies` settings whose value in `config` differs from checkpoint `restore`'s
    (in schema order); what the resumed chief records as `setting_changed` events."""
    recorded = recorded_settings(run_dir, restore.meta)
    return [Change(setting, recorded[setting], getattr(config, setting), restore.step)
            for setting in COMPARED
            if SETTINGS[setting].on_resume == APPLIES and setting in recorded
            and recorded[setting] != getattr(config, setting)]


def unused_snapshot_line(step: int, restore, previous, config) -> str:
    """Why a resume does not go on from the in-memory snapshot of global `step` and what it
    restores instead: "the in-memory snapshot of step 30 is not used: learning_rate changes on
    this resume and applies from a checkpoint's step; restoring checkpoint 25 (steps 26–30
    redone)"."""
    changed = training_changes(previous, config)
    verb, applies = ("changes", "applies") if len(changed) == 1 else ("change", "apply")
    start = restore.step if restore is not None else 0
    origin = f"checkpoint {start}" if restore is not None else "step 0 (nothing saved)"
    redone = f"step {step}" if step == start + 1 else f"steps {start + 1}–{step}"
    return (f"the in-memory snapshot of step {step} is not used: {', '.join(changed)} {verb} "
            f"on this resume and {applies} from a checkpoint's step; restoring {origin} "
            f"({redone} redone)")


def _refusal(setting: str, source: str, old, new) -> str:
    """"seed: checkpoint ckpt-60 was saved with seed 42; this run asks for 7 (…)" for `source`
    = "checkpoint ckpt-60 was saved"."""
    saved = f"by model {old}" if setting == "model" else f"with {setting} {old}"
    return (f"{setting}: {source} {saved}; this run asks for {new} "
            f"(resume with {setting} {old}, or start a new run)")


def _check_dataset(source: str, old: str, new: str, info: dict) -> None:
    """Same data: the same built-in dataset, or a file with the recorded fingerprint (any
    path); without a recorded fingerprint, or for a dataset function (whose arrays only its
    trainer computes, and compares: `user_code.data_changed`), the same source."""
    recorded = info.get("fingerprint")
    if new in BUILTIN_DATASETS or not recorded or ".py:" in new:
        if old != new:
            raise ConfigError(_refusal("dataset", source, old, new))
        return
    try:
        actual = file_fingerprint(new)
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"dataset: {new} cannot be read to compare it with the data "
                          f"{source} with ({exc})") from None
    if actual == recorded:
        return
    if old != new:
        raise ConfigError(_refusal("dataset", source, old, new))
    raise ConfigError(f"dataset: {source} with other data in {new} "
                      f"(fingerprint {recorded[:12]}, now {actual[:12]}); restore that file, "
                      f"or start a new run")


def rebuilt_config(run_dir: str | os.PathLike, meta: dict | None) -> dict:
    """The settings of a run whose `config.toml` is empty, from its own record: the first
    configuration (`run_started`), with the compared settings the checkpoint to resume from
    recorded (`meta`, its metadata) over it — the values training had there. {} when the run
    has no record of its first configuration."""
    first = {name: value for name, value in first_config(run_dir).items() if name in SETTINGS}
    if not first:
        return {}
    recorded = {name: meta[name] for name in COMPARED if meta and name in meta}
    return {**first, **recorded}


_WHAT_HAPPENS = {
    APPLIES: "takes effect from the resume step; recorded as a `setting_changed` event",
    REFUSED: "refused in one line naming the checkpoint's value and the requested one; "
             "nothing on disk changes",
    FREE: "may change on any resume (run control)",
}
_NOTES = {
    "strategy": "a checkpoint restores under any strategy, at the same data position",
    "replicas": "the global batch is split anew; the loss does not depend on the count",
    "dataset": "compared by content fingerprint: the same data under another path is fine",
    "global_batch_size": "the data position continues by the examples already seen: the "
                         "same epoch and permutation",
    "learning_rate": "Adam's restored rate is replaced by the new one",
}


def readme_table() -> str:
    """The table of docs/settings.md (the README's "Changing settings on resume" before the
    manual moved to docs/), one row per setting of the schema (a test keeps the page equal to
    it)."""
    rows = ["| setting | flag | on resume | what happens |", "|---|---|---|---|"]
    for name, setting in SETTINGS.items():
        what = _WHAT_HAPPENS[setting.on_resume]
        note = _NOTES.get(name)
        rows.append(f"| `{name}` | `{setting.flag}` | {setting.on_resume} | "
                    f"{what}{'; ' + note if note else ''} |")
    return "\n".join(rows)


def training_changes(previous, config) -> list[str]:
    """The settings that shape training (any not `free` on resume,
    `ftgui.core.settings.schema`) that `config` (a RunConfig) changes from `previous` (the
    run's config.toml before this start; None: none), in schema order."""
    if previous is None:
        return []
    return [name for name, setting in SETTINGS.items() if setting.on_resume != FREE
            and getattr(previous, name) != getattr(config, name)]


def training_changed(previous, config) -> bool:
    """True when `config` changes a setting that shapes training from `previous`
    (`training_changes`)."""
    return bool(training_changes(previous, config))


def fill_from_record(run_dir: str | os.PathLike, values: dict, meta: dict | None,
                     skip: set[str] | frozenset[str] = frozenset()) -> tuple[dict, str]:
    """`values` (the raw settings of a run's `config.toml`) with every setting it lacks, or
    holds in a form that cannot be read (not of its kind), taken from the run's own record:
    `rebuilt_config` (the `run_started` event, with what checkpoint metadata `meta` recorded
    over it). Settings in `skip` (given again as flags) are left as they are.

    Returns (settings, line): the line says which settings came from the record and their
    values ('' when none did); an unreadable value the record does not know stays (its own
    error names it). Raises `ConfigError` naming the first missing setting the run has no
    record of: a default is never taken silently for a run that trained.
    """
    from ftgui.core.settings.config import from_dict

    missing = [name for name in SETTINGS if name not in values and name not in skip]
    unreadable = {}
    for name, value in values.items():
        if name in SETTINGS and name not in skip:
            try:
                from_dict({name: value})
            except ConfigError as exc:
                unreadable[name] = str(exc).partition(": ")[2] or str(exc)
    if not missing and not unreadable:
        return dict(values), ""
    record = rebuilt_config(run_dir, meta)
    path = Path(run_dir) / "config.toml"
    # an unreadable value the record cannot replace stays: its own error names it
    unreadable = {name: why for name, why in unreadable.items() if name in record}
    unknown = [name for name in missing if name not in record]
    if unknown:
        raise ConfigError(f"{unknown[0]}: {path} lacks it and the run's own record does not "
                          f"say what the run trained with; write it there to resume")
    if not missing and not unreadable:
        return dict(values), ""
    wanted = [*missing, *unreadable]
    taken = {name: record[name] for name in wanted}
    what = []
    if missing:
        what.append(f"lacks {', '.join(missing)}")
    if unreadable:
        what.append("cannot read " + ", ".join(f"{name} ({why})"
                                              for name, why in unreadable.items()))
    source = "the run_started event" + (f" and checkpoint ckpt-{meta['step']}"
                                        if meta and "step" in meta else "")
    if not values:
        return taken, f"{path} is empty; settings rebuilt from the run's own record ({source})"
    values = {**values, **taken}
    shown = ", ".join(f"{name} {value}" for name, value in taken.items())
    return values, (f"{path} {' and '.join(what)}: taken from the run's own record ({source}): "
                    f"{shown}")


def load_config(run_dir: str | os.PathLike, has_history: bool) -> tuple[RunConfig, str]:
    """The configuration of run `run_dir` from its `config.toml`, and a line saying which
    settings came from the run's own record ('' when none did): for a run that trained
    (`has_history`), a setting the file lacks or cannot read comes from the record
    (`fill_from_record`, with the newest valid checkpoint's metadata), never from a default.
    Raises `ConfigError` naming the file, or `OSError`."""
    values = configmod.load_values(run_dir)
    if set(SETTINGS) <= set(values):  # complete: the record is not read
        try:
            return configmod.load(run_dir), ""
        except ConfigError:
            if not has_history:
                raise
    note = ""
    if has_history:  # a setting missing or unreadable: from the record
        restore = listing.newest_valid(run_dir)
        values, note = fill_from_record(run_dir, values, restore.meta if restore else None)
    try:
        return configmod.from_dict(values), note
    except ConfigError as exc:
        raise ConfigError(f"{exc} (in {Path(run_dir) / configmod.CONFIG_FILE})") from None
