"""The epoch files of a `--loop fit` run (`RUN/fit-checkpoints/epoch-NNN.weights.h5`, written by
Keras' ModelCheckpoint), listed and validated like ftgui's own checkpoints from metadata ftgui
writes beside them (`RUN/fit-metadata/`, since Keras owns the folder of the files). Restoring one
gives back the start of the next epoch, not a step."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ftgui.core.checkpoints.listing import CheckpointInfo, _stat, sync_files

FIT_DIR = "fit-checkpoints"  # `--loop fit`: Keras ModelCheckpoint's weights, one per epoch
FIT_META_DIR = "fit-metadata"  # their metadata: Keras owns the folder of the files
FIT_RESTORES = "fit: restores the epoch start"
_FIT_FILE = re.compile(r"^epoch-(\d+)\.weights\.h5$")


def write_fit_metadata(path: Path, **fields) -> Path:
    """Record `fields` (step, loss, …) and the file's size for a `--loop fit` epoch file
    `RUN/fit-checkpoints/epoch-NNN.weights.h5` that Keras has finished writing, in
    `RUN/fit-metadata/epoch-NNN.meta.json`. Returns the metadata path."""
    record = {**fields, "restores": FIT_RESTORES, "files": {path.name: path.stat().st_size}}
    sync_files(path.parent, [path.name])  # on disk before the metadata vouches
    meta = _fit_meta_path(path)
    meta.parent.mkdir(exist_ok=True)
    tmp = meta.with_name(meta.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1), encoding="utf-8")
    os.replace(tmp, meta)
    return meta


def list_fit_checkpoints(run_dir: str | os.PathLike) -> list[CheckpointInfo]:
    """The epoch files of a `--loop fit` run (`RUN/fit-checkpoints/`), oldest first, each
    valid when its metadata (see `write_fit_metadata`) names its size. Restoring one gives back
    the start of the next epoch, not a step (`FIT_RESTORES`); ftgui's resume does not take
    them (Keras' BackupAndRestore does). Without metadata the step is unknown (0)."""
    directory = Path(run_dir) / FIT_DIR
    if not directory.is_dir():
        return []
    found = []
    for path in sorted(directory.iterdir()):
        match = _FIT_FILE.match(path.name)
        stat = _stat(path) if match else None
        if stat is None:
            continue
        info = CheckpointInfo(step=0, prefix=path, valid=False, size=stat.st_size,
                              time=stat.st_mtime, meta={"restores": FIT_RESTORES,
                                                        "epoch": int(match.group(1)) - 1})
        try:
            info.meta.update(json.loads(_fit_meta_path(path).read_text(encoding="utf-8")))
        except FileNotFoundError:
            info.reason = "no metadata: the save did not finish"
        except (OSError, ValueError):
            info.reason = "metadata file is unreadable"
        if not info.reason:
            info.step, info.time = int(info.meta.get("step", 0)), info.meta.get("time", info.time)
            expected = info.meta.get("files", {}).get(path.name)
            if expected != stat.st_size:
                info.reason = f"{path.name} has {stat.st_size} bytes, expected {expected}"
        info.valid = not info.reason
        found.append(info)
    return sorted(found, key=lambda info: (info.step, info.meta["epoch"]))


def _fit_meta_path(path: Path) -> Path:
    name = path.name.removesuffix(".weights.h5") + ".meta.json"
    return path.parent.parent / FIT_META_DIR / name
