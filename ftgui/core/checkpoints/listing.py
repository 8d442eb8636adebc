"""Checkpoints in `RUN/checkpoints/`, listed and validated from the files alone (no TensorFlow).

A TensorFlow checkpoint of global step N is `ckpt-N.index` plus `ckpt-N.data-0000K-of-0000M`
shards. After TensorFlow has finished writing them, the trainer writes `ckpt-N.meta.json` with
the step, losses, time, the size in bytes of every file, and what the run was made with (model,
dataset, settings, data position: see `ftgui.core.checkpoints.resume_check`). A checkpoint is valid
only when its metadata exists and every file it names is present with that size: a save cut short by
`kill -9` (leftover `ckpt-N_temp` folder, missing shard, truncated file) is never offered.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

CHECKPOINT_DIR = "checkpoints"
PREFIX = "ckpt"
_FILE = re.compile(rf"^{PREFIX}-(\d+)\.(index|meta\.json|data-(\d+)-of-(\d+))$")
# Leftovers of a save cut short: TensorFlow's temp folder of a sharded save, the temp file of
# its atomic write of the `checkpoint` state file, and ftgui's own metadata temp file.
_LEFTOVER = re.compile(
    rf"^({PREFIX}-\d+_temp|checkpoint\.tmp[0-9a-f]*|{PREFIX}-\d+\.meta\.json\.tmp)$"
)
# TensorFlow reads a path as a glob pattern from the first of these (tsl file_system_helper).
_GLOB_CHARS = frozenset("*?[\\")


@dataclass
class CheckpointInfo:
    """One checkpoint as found on disk.

    `size` is the total bytes of its TensorFlow files; `time` is Unix seconds from the metadata
    (or the index file's mtime when there is none); `reason` says why it is invalid ('' if valid).
    """

    step: int
    prefix: Path
    valid: bool
    reason: str = ""
    size: int = 0
    time: float = 0.0
    meta: dict = field(default_factory=dict)

    @property
    def loss(self) -> float | None:
        return self.meta.get("loss")

    @property
    def relpath(self) -> str:
        """Path of the checkpoint prefix relative to the run directory (what events record)."""
        return f"{self.prefix.parent.name}/{self.prefix.name}"

    @property
    def restores(self) -> str:
        """What restoring it gives back: '' for ftgui's own checkpoints (the exact step, the
        optimizer and the data position), `FIT_RESTORES` for a `--loop fit` epoch file."""
        return self.meta.get("restores", "")




def checkpoint_dir(run_dir: str | os.PathLike) -> Path:
    return Path(run_dir) / CHECKPOINT_DIR


def meta_path(prefix: Path) -> Path:
    return prefix.with_name(prefix.name + ".meta.json")


def damage_path(prefix: Path) -> Path:
    """Where a trainer that could not restore this checkpoint wrote why (`ckpt-N.damaged`)."""
    return prefix.with_name(prefix.name + ".damaged")


def mark_damaged(prefix: Path, reason: str) -> Path:
    """Record that checkpoint `prefix` failed to restore, so it is never offered again (its
    files stay on disk for a post-mortem). Returns the marker's path."""
    path = damage_path(prefix)
    path.write_text(reason.strip().splitlines()[0][:500] if reason.strip() else "unreadable",
                    encoding="utf-8")
    return path


def tf_path(path: str | os.PathLike) -> Path:
    """`path` (made absolute) as TensorFlow can take it: a path it does not read as a pattern.

    TensorFlow globs checkpoint paths (its checkpoint reader looks for `PREFIX.index` with
    `GetMatchingPaths`; CheckpointManager's retention and `checkpoint_exists` use
    `get_matching_files`), so a folder named `exp[lr=0.01]` makes every restore fail. Escaping is
    no fix: the glob then matches, but the reader opens the escaped string as a file name. So a
    path holding any of `*?[\\` is reached through a symlink to its deepest folder whose name
    holds one (usually the run folder, created if missing), kept in this user's folder under
    the system temp folder and named by a hash of that folder: one link per run, shared by its
    processes, and the rest of the path (a `checkpoints` or `scratch` folder that may come and
    go) stays real. Other paths come back unchanged. Raises OSError when no link can be made.
    """
    path = Path(path).absolute()
    if not _GLOB_CHARS & set(str(path)):
        return path
    parts = path.parts
    last = max(i for i, part in enumerate(parts) if _GLOB_CHARS & set(part))
    target, tail = Path(*parts[:last + 1]), parts[last + 1:]
    target.mkdir(parents=True, exist_ok=True)
    links = Path(tempfile.gettempdir()) / f"ftgui-{os.getuid()}-paths"
    links.mkdir(mode=0o700, exist_ok=True)
    if links.stat().st_uid != os.getuid() or _GLOB_CHARS & set(str(links)):
        raise OSError(f"cannot make a glob-free path to {path}: {links} is unusable")
    link = links / hashlib.sha256(os.fsencode(target)).hexdigest()[:20]
    if not (link.is_symlink() and os.readlink(link) == str(target)):
        fresh = link.with_name(f"{link.name}.{os.getpid()}")
        fresh.unlink(missing_ok=True)
        os.symlink(target, fresh, target_is_directory=True)
        os.replace(fresh, link)  # atomic: a concurrent process sees the old link or this one
        for other in links.iterdir():  # links to run folders deleted since then
            if other.is_symlink() and not other.exists():
                other.unlink(missing_ok=True)
    return link.joinpath(*tail)


def remove_leftovers(run_dir: str | os.PathLike) -> list[str]:
    """Delete what saves and retentions cut short left in `RUN/checkpoints/`: `ckpt-N_temp`
    folders (a kill during a save), `checkpoint.tmp…` files (a kill or a full disk while
    TensorFlow rewrote its state file), `ckpt-N.meta.json.tmp`, and what is left of a checkpoint
    whose deletion by the retention (`CheckpointManager`'s `max_to_keep`, `keep_newest`) a kill
    interrupted (`retention_leftovers`). Never touches a valid checkpoint's files.

    Call only when no process is saving into the run (at the start of its chief). Returns the
    names removed, sorted.
    """
    directory = checkpoint_dir(run_dir)
    if not directory.is_dir():
        return []
    removed = []
    for path in directory.iterdir():
        if not _LEFTOVER.match(path.name):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path.name)
    for info in retention_leftovers(run_dir):
        for path in [*tf_files(directory, info.step), meta_path(info.prefix),
                     damage_path(info.prefix)]:
            if path.exists():
                path.unlink()
                removed.append(path.name)
    return sorted(removed)


def retention_leftovers(run_dir: str | os.PathLike) -> list[CheckpointInfo]:
    """Checkpoints a retention began to delete: older than the newest valid checkpoint, with
    metadata (their save had finished), and with some of the files it lists gone while every
    file still there has its recorded size. Such a checkpoint can never be restored again."""
    found = list_checkpoints(run_dir)
    newest = max((info.step for info in found if info.valid), default=None)
    if newest is None:
        return []
    return [info for info in found
            if not info.valid and info.step < newest and _partly_deleted(info)]


def _partly_deleted(info: CheckpointInfo) -> bool:
    expected = info.meta.get("files")
    if not isinstance(expected, dict) or info.meta.get("step") != info.step:
        return False
    sizes = {name: _stat(info.prefix.parent / name) for name in expected}
    if all(stat is not None for stat in sizes.values()):
        return False  # nothing deleted: invalid for another reason (sizes, damage): kept
    return all(stat is None or stat.st_size == expected[name] for name, stat in sizes.items())


def tf_files(directory: Path, step: int) -> list[Path]:
    """The TensorFlow files (index and data shards) present for `step`, sorted by name."""
    start, names = f"{PREFIX}-{step}.", []
    try:
        with os.scandir(directory) as entries:  # ~4x faster than Path.glob (bench_checkpoint)
            for entry in entries:
                match = _FILE.match(entry.name) if entry.name.startswith(start) else None
                if match and match.group(2) != "meta.json":
                    names.append(Path(entry.path))
    except FileNotFoundError:
        return []
    return sorted(names)


def file_step(name: str) -> int | None:
    """The step of a checkpoint file name (`ckpt-N.index`, `.data-…`, `.meta.json`), else None."""
    match = _FILE.match(name)
    return int(match.group(1)) if match else None


def write_metadata(prefix: Path, files: dict[str, int] | None = None, **fields) -> Path:
    """Record `fields` plus every TensorFlow file's size next to a just-saved checkpoint
    (`files`: name -> bytes, when the caller has them already).

    Call only after TensorFlow's save returned. The TensorFlow files and their folder are
    flushed to disk (fsync) first, so that a power cut never leaves metadata vouching for data
    that is not on disk; a file that is not in the folder (it was removed or replaced) raises
    FileNotFoundError and no metadata is written. Written via temp file (flushed too, so that it
    is never found empty) + rename so a reader never sees half a metadata file. Returns the
    metadata path.
    """
    step = int(prefix.name.rsplit("-", 1)[1])
    if files is None:
        files = {path.name: path.stat().st_size for path in tf_files(prefix.parent, step)}
    sync_files(prefix.parent, files)
    record = {"step": step, **fields, "files": files}
    path = meta_path(prefix)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(record, indent=1))
        handle.flush()
        os.fsync(handle.fileno())
    # The rename is not synced on its own (one journal commit less, ~5 ms here): retention's
    # deletions of older checkpoints come after it in the same journal, so a power cut leaves
    # the new checkpoint valid, or the older ones still there.
    os.replace(tmp, path)
    return path


def sync_files(directory: Path, names) -> None:
    """fsync each file `names` of `directory`, then the folder (its entries). Raises OSError
    (FileNotFoundError for a file that is not there)."""
    for name in names:
        fd = os.open(directory / name, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    _sync_folder(directory)


def _sync_folder(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as exc:  # some file systems cannot sync a folder: the files are synced
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def read_info(prefix: Path, files: list[Path] | None = None) -> CheckpointInfo:
    """Validate one checkpoint from its files (`files`: its TensorFlow files when the caller
    has listed the folder already); never raises for a damaged checkpoint."""
    step = int(prefix.name.rsplit("-", 1)[1])
    if files is None:
        files = tf_files(prefix.parent, step)
    # Files can vanish while we look (CheckpointManager deleting beyond max_to_keep).
    sizes = {path.name: _stat(path) for path in files}
    present = {name: st.st_size for name, st in sizes.items() if st is not None}
    info = CheckpointInfo(step=step, prefix=prefix, valid=False, size=sum(present.values()))
    index = sizes.get(f"{prefix.name}.index")
    if index is not None:
        info.time = index.st_mtime
    try:
        meta = json.loads(meta_path(prefix).read_text(encoding="utf-8"))
    except FileNotFoundError:
        info.reason = "no metadata: the save did not finish"
        return info
    except (OSError, ValueError):
        info.reason = "metadata file is unreadable"
        return info
    if not isinstance(meta, dict):  # hand-edited: JSON, but not the object ftgui writes
        info.reason = "metadata file is unreadable"
        return info
    info.meta = meta
    when = meta.get("time")
    if isinstance(when, (int, float)) and not isinstance(when, bool):
        info.time = when
    info.reason = _file_problem(prefix, meta, present)
    damaged = damage_path(prefix)
    if not info.reason and damaged.exists():
        info.reason = f"damaged: {damaged.read_text(encoding='utf-8', errors='replace')}"
    info.valid = not info.reason
    return info


def file_problem(prefix: Path) -> str:
    """Why checkpoint `prefix`'s files disagree with its metadata (missing metadata, a missing
    file, a file of another size), or '' when they agree. A damage marker is not counted: this
    asks only what the files say."""
    info = read_info(prefix)
    if info.reason.startswith("damaged: "):
        return ""
    return info.reason


def resume_point(run_dir: str | os.PathLike) -> tuple[CheckpointInfo | None, str]:
    """The checkpoint a resume of `run_dir` continues from (the newest valid one, or None), and
    the line to show the user when that is news: a resume without a valid checkpoint starts
    from step 0 ('' when there is one: the `resumed` event tells that story)."""
    newest = newest_valid(run_dir)
    if newest is None:
        return None, f"no valid checkpoint in {run_dir}; starting from step 0"
    return newest, ""


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:
        return None


def _file_problem(prefix: Path, meta: dict, present: dict[str, int]) -> str:
    if meta.get("step") != int(prefix.name.rsplit("-", 1)[1]):
        return f"metadata names step {meta.get('step')}"
    expected: dict = meta.get("files") or {}
    if f"{prefix.name}.index" not in expected:
        return "metadata lists no index file"
    for name, size in sorted(expected.items()):
        actual = present.get(name)
        if actual is None:
            return f"{name} is missing"
        if actual != size:
            return f"{name} has {actual} bytes, expected {size}"
    for name in present:
        match = _FILE.match(name)
        if match and match.group(3) is not None:
            shards = int(match.group(4))
            for k in range(shards):
                shard = f"{prefix.name}.data-{k:05d}-of-{shards:05d}"
                if shard not in present:
                    return f"{shard} is missing"
    return ""


def list_checkpoints(run_dir: str | os.PathLike) -> list[CheckpointInfo]:
    """Every checkpoint step that has any file in `RUN/checkpoints/`, oldest first."""
    directory = checkpoint_dir(run_dir)
    if not directory.is_dir():
        return []
    files: dict[int, list[Path]] = {}  # one listing of the folder, not one per checkpoint
    for path in directory.iterdir():
        match = _FILE.match(path.name)
        if match:
            tf_file = match.group(2) != "meta.json"
            files.setdefault(int(match.group(1)), []).extend([path] if tf_file else [])
    return [read_info(directory / f"{PREFIX}-{step}", sorted(files[step]))
            for step in sorted(files)]


def newest_valid(run_dir: str | os.PathLike, at_most: int | None = None) -> CheckpointInfo | None:
    """The valid checkpoint with the highest step (≤ `at_most` when given), or None."""
    for info in reversed(list_checkpoints(run_dir)):
        if info.valid and (at_most is None or info.step <= at_most):
            return info
    return None


def find(run_dir: str | os.PathLike, step: int) -> CheckpointInfo:
    """The valid checkpoint of exactly `step`.

    Raises `LookupError` with the reason when it is absent or invalid.
    """
    for info in list_checkpoints(run_dir):
        if info.step == step:
            if not info.valid:
                raise LookupError(f"checkpoint of step {step} is invalid: {info.reason}")
            return info
    valid = [str(i.step) for i in list_checkpoints(run_dir) if i.valid]
    raise LookupError(
        f"no checkpoint of step {step}; valid steps: {', '.join(valid) or 'none'}"
    )


def keep_newest(directory: Path, keep: int, newest: int) -> list[CheckpointInfo]:
    """Keep the `keep` newest valid checkpoints up to step `newest` in `directory` and delete
    every older one, valid or not (TensorFlow files, metadata, damage marker); checkpoints
    after `newest`, and invalid ones between the kept ones, are left alone.
    Returns the kept valid checkpoints, oldest first."""
    found = [info for info in list_checkpoints(directory.parent) if info.step <= newest]
    kept = [info for info in found if info.valid][-keep:] if keep > 0 else []
    if not kept:
        return []
    for info in found:
        if info.step < kept[0].step:
            for path in tf_files(directory, info.step):
                path.unlink(missing_ok=True)
            meta_path(info.prefix).unlink(missing_ok=True)
            damage_path(info.prefix).unlink(missing_ok=True)
    return kept
