"""Retention after each background save: the folder listing compared with memory stands in for
the full pass only when the full pass could reach no other verdict."""

from __future__ import annotations

import shutil

import pytest
from conftest import fake_checkpoint

from ftgui.core.checkpoints import listing as checkpoints
from ftgui.core.checkpoints.retention import Retention


def saved(run_dir, step: int) -> dict[str, int]:
    """Write fake checkpoint `step` as a trainer does; its files' names -> bytes."""
    prefix = fake_checkpoint(run_dir, step)
    names = [p for p in prefix.parent.iterdir() if checkpoints.file_step(p.name) == step]
    return {p.name: p.stat().st_size for p in names}


def folder(run_dir) -> dict[str, int]:
    directory = checkpoints.checkpoint_dir(run_dir)
    return {p.name: p.stat().st_size for p in directory.iterdir() if p.name != "checkpoint"}


@pytest.fixture
def full_passes(monkeypatch):
    calls = []
    keep_newest = checkpoints.keep_newest
    monkeypatch.setattr(checkpoints, "keep_newest",
                        lambda *args: calls.append(args[2]) or keep_newest(*args))
    return calls


def test_a_clean_run_does_one_full_pass_and_keeps_the_newest(tmp_path, full_passes):
    retention = Retention(checkpoints.checkpoint_dir(tmp_path), keep=3)
    for step in range(10, 90, 10):
        kept = retention.after_save(step, saved(tmp_path, step), 1_000_000.0 + step)
        assert [c.step for c in kept] == [s for s in range(10, step + 10, 10)][-3:]
    assert full_passes == [10]
    assert [(c.step, c.valid, c.time, c.size) for c in kept] == [
        (s, True, 1_000_000.0 + s, 100 + s + 1000) for s in (60, 70, 80)]
    assert sorted(folder(tmp_path)) == sorted(
        f"ckpt-{s}{end}" for s in (60, 70, 80)
        for end in (".index", ".data-00000-of-00001", ".meta.json"))


def disturb_damage(directory):
    checkpoints.mark_damaged(directory / "ckpt-50", "DataLossError: checksum")


def disturb_truncate(directory):
    (directory / "ckpt-40.data-00000-of-00001").write_bytes(b"d" * 10)


def disturb_remove(directory):
    (directory / "ckpt-50.index").unlink()


def disturb_leftover(directory):
    (directory / "ckpt-60_temp").mkdir()


def disturb_newer(directory):
    fake_checkpoint(directory.parent, 75)  # an earlier attempt's, past the resumed step


def disturb_older(directory):
    fake_checkpoint(directory.parent, 5)


def disturb_rewrite(directory):
    meta = checkpoints.meta_path(directory / "ckpt-40")
    meta.write_bytes(b"\0" * meta.stat().st_size)  # same size, unreadable


@pytest.mark.parametrize("disturb", [disturb_damage, disturb_truncate, disturb_remove,
                                     disturb_leftover, disturb_newer, disturb_older,
                                     disturb_rewrite])
def test_any_change_by_another_hand_gives_the_full_passs_verdict(tmp_path, full_passes,
                                                                  disturb):
    """Two folders saved in step; one kept by `Retention`, the other by `keep_newest` after every
    save. After a disturbance in both, they stay equal, file for file, and so do the verdicts."""
    fast_dir, full_dir = tmp_path / "fast", tmp_path / "full"
    retention = Retention(checkpoints.checkpoint_dir(fast_dir), keep=3)
    for step in range(10, 130, 10):
        if step == 60:
            for run_dir in (fast_dir, full_dir):
                disturb(checkpoints.checkpoint_dir(run_dir))
        fast = retention.after_save(step, saved(fast_dir, step), 1_000_000.0 + step)
        saved(full_dir, step)
        full = checkpoints.keep_newest(checkpoints.checkpoint_dir(full_dir), 3, step)
        assert [(c.step, c.time) for c in fast] == [(c.step, c.time) for c in full]
        assert folder(fast_dir) == folder(full_dir)
    assert full_passes[0] == 10 and 60 in full_passes[1:]


def test_the_listing_is_trusted_again_once_the_folder_is_clean(tmp_path, full_passes):
    directory = checkpoints.checkpoint_dir(tmp_path)
    retention = Retention(directory, keep=2)
    for step in (10, 20, 30):
        retention.after_save(step, saved(tmp_path, step), float(step))
    (directory / "ckpt-30_temp").mkdir()
    retention.after_save(40, saved(tmp_path, 40), 40.0)
    shutil.rmtree(directory / "ckpt-30_temp")
    for step in (50, 60, 70):
        kept = retention.after_save(step, saved(tmp_path, step), float(step))
    assert full_passes == [10, 40]  # 40 saw the leftover; 50 on, the folder is as kept
    assert [c.step for c in kept] == [60, 70]
