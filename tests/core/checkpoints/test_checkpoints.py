"""Checkpoints judged from their files alone: which ones a user is offered, and why not the others.

The checkpoints here are fake (bytes in files named like TensorFlow's) with real metadata, so
the damage a `kill -9` leaves behind can be made exactly.
"""

from __future__ import annotations

import json

import pytest
from conftest import fake_checkpoint

from ftgui import cli
from ftgui.core.checkpoints import listing
from ftgui.core.checkpoints.listing import write_metadata


@pytest.fixture
def run_dir(tmp_path):
    """A run with checkpoints of steps 10 … 50, all complete."""
    for step in (10, 20, 30, 40, 50):
        fake_checkpoint(tmp_path, step)
    return tmp_path


def by_step(run_dir) -> dict[int, listing.CheckpointInfo]:
    return {info.step: info for info in listing.list_checkpoints(run_dir)}


def test_complete_checkpoints_are_listed_oldest_first_with_their_metadata(run_dir):
    listed = listing.list_checkpoints(run_dir)
    assert [(c.step, c.valid, c.reason) for c in listed] == [
        (10, True, ""), (20, True, ""), (30, True, ""), (40, True, ""), (50, True, ""),
    ]
    thirty = listed[2]
    assert thirty.loss == 1.0 / 30
    assert thirty.time == 1_000_030.0
    assert thirty.size == 130 + 1000
    assert thirty.relpath == "checkpoints/ckpt-30"
    assert thirty.meta["files"] == {"ckpt-30.data-00000-of-00001": 1000, "ckpt-30.index": 130}
    assert listing.newest_valid(run_dir).step == 50
    assert listing.newest_valid(run_dir, at_most=45).step == 40


def test_a_run_without_checkpoints_lists_none(tmp_path):
    assert listing.list_checkpoints(tmp_path) == []
    assert listing.newest_valid(tmp_path) is None


def test_a_checkpoint_whose_index_is_gone_is_invalid(run_dir):
    (run_dir / "checkpoints" / "ckpt-50.index").unlink()
    info = by_step(run_dir)[50]
    assert (info.valid, info.reason) == (False, "ckpt-50.index is missing")
    assert listing.newest_valid(run_dir).step == 40


def test_a_missing_data_shard_makes_a_checkpoint_invalid(tmp_path):
    fake_checkpoint(tmp_path, 10, shards=2)
    (tmp_path / "checkpoints" / "ckpt-10.data-00001-of-00002").unlink()
    info = by_step(tmp_path)[10]
    assert (info.valid, info.reason) == (False, "ckpt-10.data-00001-of-00002 is missing")


def test_a_shard_the_metadata_does_not_know_must_still_be_complete(tmp_path):
    # Metadata written while only shard 0 of 2 existed: the set of shards is still incomplete.
    directory = listing.checkpoint_dir(tmp_path)
    directory.mkdir()
    (directory / "ckpt-10.index").write_bytes(b"i")
    (directory / "ckpt-10.data-00000-of-00002").write_bytes(b"d")
    write_metadata(directory / "ckpt-10")
    info = by_step(tmp_path)[10]
    assert (info.valid, info.reason) == (False, "ckpt-10.data-00001-of-00002 is missing")


def test_a_truncated_data_shard_makes_a_checkpoint_invalid(run_dir):
    shard = run_dir / "checkpoints" / "ckpt-40.data-00000-of-00001"
    shard.write_bytes(shard.read_bytes()[:600])
    info = by_step(run_dir)[40]
    assert (info.valid, info.reason) == (
        False, "ckpt-40.data-00000-of-00001 has 600 bytes, expected 1000"
    )
    assert info.size == 140 + 600


def test_a_save_cut_short_before_its_metadata_is_invalid(run_dir):
    fake_checkpoint(run_dir, 60, metadata=False)
    info = by_step(run_dir)[60]
    assert (info.valid, info.reason) == (False, "no metadata: the save did not finish")
    assert info.loss is None
    assert listing.newest_valid(run_dir).step == 50


def test_unreadable_or_foreign_metadata_is_invalid(run_dir):
    (run_dir / "checkpoints" / "ckpt-50.meta.json").write_text('{"step": 50, "fil')
    (run_dir / "checkpoints" / "ckpt-40.meta.json").write_text('{"step": 30, "files": {}}')
    listed = by_step(run_dir)
    assert (listed[50].valid, listed[50].reason) == (False, "metadata file is unreadable")
    assert (listed[40].valid, listed[40].reason) == (False, "metadata names step 30")


def test_metadata_that_is_json_but_no_object_is_unreadable_not_a_crash(run_dir, capsys):
    """Found while trying to break issue 25: a meta.json holding `[1, 2]` made `ftgui
    checkpoints`, `train --resume` and `report` end in an AttributeError traceback; a string
    `time` would be shown as the save time."""
    (run_dir / "checkpoints" / "ckpt-50.meta.json").write_text("[1, 2]", encoding="utf-8")
    meta = json.loads((run_dir / "checkpoints" / "ckpt-40.meta.json").read_text("utf-8"))
    (run_dir / "checkpoints" / "ckpt-40.meta.json").write_text(
        json.dumps({**meta, "time": "yesterday"}), encoding="utf-8")
    listed = by_step(run_dir)
    assert (listed[50].valid, listed[50].reason) == (False, "metadata file is unreadable")
    assert listed[40].valid and isinstance(listed[40].time, float)
    assert cli.main(["checkpoints", str(run_dir)]) == 0


def test_a_leftover_temp_folder_of_a_killed_save_is_not_a_checkpoint(run_dir):
    temp = run_dir / "checkpoints" / "ckpt-60_temp"
    temp.mkdir()
    (temp / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"half")
    (run_dir / "checkpoints" / "checkpoint").write_text('model_checkpoint_path: "ckpt-50"\n')
    assert [c.step for c in listing.list_checkpoints(run_dir)] == [10, 20, 30, 40, 50]
    assert listing.newest_valid(run_dir).step == 50


def test_newest_valid_falls_back_when_the_newest_files_are_deleted(run_dir):
    for path in (run_dir / "checkpoints").glob("ckpt-50.*"):
        path.unlink()
    assert 50 not in by_step(run_dir)
    assert listing.newest_valid(run_dir).step == 40


def test_metadata_left_alone_lists_the_step_as_invalid(run_dir):
    for path in (run_dir / "checkpoints").glob("ckpt-50.*"):
        if not path.name.endswith(".meta.json"):
            path.unlink()
    info = by_step(run_dir)[50]
    assert (info.valid, info.reason, info.size) == (
        False, "ckpt-50.data-00000-of-00001 is missing", 0
    )
    assert listing.newest_valid(run_dir).step == 40


def test_find_returns_the_valid_checkpoint_of_a_step(run_dir):
    info = listing.find(run_dir, 30)
    assert (info.step, info.valid, info.prefix) == (30, True, run_dir / "checkpoints" / "ckpt-30")


def test_find_says_which_steps_exist_when_a_step_has_no_checkpoint(run_dir):
    (run_dir / "checkpoints" / "ckpt-20.index").unlink()
    with pytest.raises(LookupError) as caught:
        listing.find(run_dir, 35)
    assert str(caught.value) == "no checkpoint of step 35; valid steps: 10, 30, 40, 50"


def test_find_refuses_an_invalid_checkpoint_and_says_why(run_dir):
    (run_dir / "checkpoints" / "ckpt-20.index").unlink()
    with pytest.raises(LookupError) as caught:
        listing.find(run_dir, 20)
    assert str(caught.value) == "checkpoint of step 20 is invalid: ckpt-20.index is missing"


def test_find_in_a_run_without_checkpoints(tmp_path):
    with pytest.raises(LookupError, match="^no checkpoint of step 10; valid steps: none$"):
        listing.find(tmp_path, 10)


def test_step_1_and_step_10_are_told_apart(tmp_path):
    fake_checkpoint(tmp_path, 1)
    fake_checkpoint(tmp_path, 10)
    (tmp_path / "checkpoints" / "ckpt-10.index").unlink()
    listed = by_step(tmp_path)
    assert (listed[1].valid, listed[1].size) == (True, 101 + 1000)
    assert (listed[10].valid, listed[10].size) == (False, 1000)


def test_a_checkpoint_that_failed_to_restore_is_invalid_with_the_reason(tmp_path):
    from ftgui.core.checkpoints.listing import mark_damaged

    prefix = fake_checkpoint(tmp_path, 30)
    assert listing.newest_valid(tmp_path).step == 30
    mark_damaged(prefix, "DataLossError: Checksum does not match\nmore detail")
    [info] = listing.list_checkpoints(tmp_path)
    assert (info.valid, info.reason) == (False, "damaged: DataLossError: Checksum does not match")
    assert listing.newest_valid(tmp_path) is None


def test_retention_keeps_the_newest_valid_and_drops_everything_older(run_dir):
    directory = listing.checkpoint_dir(run_dir)
    (directory / "ckpt-40.index").unlink()  # 40 invalid: between kept ones, left for a look
    fake_checkpoint(run_dir, 60)
    fake_checkpoint(run_dir, 5, metadata=False)  # an old save cut short
    assert [c.step for c in listing.keep_newest(directory, keep=3, newest=50)] == [20, 30, 50]
    assert {step: info.valid for step, info in by_step(run_dir).items()} == {
        20: True, 30: True, 40: False, 50: True, 60: True}  # 60 is after `newest`
    assert not list(directory.glob("ckpt-10*")) and not list(directory.glob("ckpt-5.*"))


def test_retention_with_nothing_valid_deletes_nothing(tmp_path):
    fake_checkpoint(tmp_path, 10, metadata=False)
    assert listing.keep_newest(listing.checkpoint_dir(tmp_path), 2, 10) == []
    assert [c.step for c in listing.list_checkpoints(tmp_path)] == [10]
