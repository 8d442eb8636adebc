"""A checkpoint's metadata (what makes it valid) is written only after its TensorFlow files and
their folder are on disk (fsync), so a power cut can never leave metadata pointing at data that
is not there (issue 25, "the whole kind"); a file missing from its folder writes none."""

from __future__ import annotations

import os

import pytest
from conftest import fake_checkpoint

from ftgui.core.checkpoints import fit_checkpoints, listing


def _record_syncs(monkeypatch) -> list[str]:
    """What is flushed and renamed, in order: 'fsync NAME' / 'replace NAME'."""
    seen = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        seen.append(f"fsync {os.path.basename(os.readlink(f'/proc/self/fd/{fd}'))}")
        real_fsync(fd)

    def replace(src, dst):
        seen.append(f"replace {os.path.basename(dst)}")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return seen


def test_the_files_and_folder_are_on_disk_before_the_metadata(tmp_path, monkeypatch):
    prefix = fake_checkpoint(tmp_path, 30, shards=2, metadata=False)
    seen = _record_syncs(monkeypatch)
    files = {p.name: p.stat().st_size for p in listing.tf_files(prefix.parent, 30)}
    listing.write_metadata(prefix, files, loss=0.5, time=1e6)
    assert seen == ["fsync ckpt-30.data-00000-of-00002", "fsync ckpt-30.data-00001-of-00002",
                    "fsync ckpt-30.index", "fsync checkpoints", "fsync ckpt-30.meta.json.tmp",
                    "replace ckpt-30.meta.json"]
    assert listing.read_info(prefix).valid


def test_a_file_gone_from_the_folder_gets_no_metadata(tmp_path):
    """The folder was replaced between the write and the metadata: nothing vouches."""
    prefix = fake_checkpoint(tmp_path, 30, metadata=False)
    files = {p.name: p.stat().st_size for p in listing.tf_files(prefix.parent, 30)}
    (prefix.parent / "ckpt-30.index").unlink()
    with pytest.raises(FileNotFoundError):
        listing.write_metadata(prefix, files, loss=0.5, time=1e6)
    assert not listing.meta_path(prefix).exists()


def test_a_fit_epoch_file_is_on_disk_before_its_metadata(tmp_path, monkeypatch):
    weights = tmp_path / fit_checkpoints.FIT_DIR / "epoch-002.weights.h5"
    weights.parent.mkdir()
    weights.write_bytes(b"w" * 64)
    seen = _record_syncs(monkeypatch)
    fit_checkpoints.write_fit_metadata(weights, step=10, epoch=1, loss=0.5, time=1e6)
    assert seen[:2] == ["fsync epoch-002.weights.h5", f"fsync {fit_checkpoints.FIT_DIR}"]
    assert seen[-1] == "replace epoch-002.meta.json"
