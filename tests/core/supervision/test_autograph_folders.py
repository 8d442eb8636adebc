"""A trainer keeps autograph's files in a folder of its own (`processes.autograph_folder`);
the folders of processes that are gone are deleted (`sweep_autograph_folders`), those of live
ones kept. The trainer's side is in test_supervisor.py (a SIGKILLed trainer's folder goes)."""

from __future__ import annotations

import subprocess
import sys
import time

from ftgui.core.supervision import processes
from ftgui.core.supervision.processes import autograph_folder, sweep_autograph_folders


def test_the_folders_of_gone_processes_are_deleted_and_of_live_ones_kept(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setattr(processes, "autograph_folder",
                        lambda pid: tmp_path / f"ftgui-autograph-{pid}")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # reaped: its pid names no process
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        for pid in (gone.pid, live.pid, zombie.pid):
            folder = processes.autograph_folder(pid)
            folder.mkdir()
            (folder / "__autograph_generated_fileabc.py").write_text("x = 1\n")
        (tmp_path / "ftgui-autograph-notapid").mkdir()
        while not _is_zombie(zombie.pid):  # exited, not reaped (no poll: that reaps)
            time.sleep(0.01)
        assert sweep_autograph_folders() == 2  # the gone one and the zombie
        assert sorted(p.name for p in tmp_path.iterdir()) == \
            [f"ftgui-autograph-{live.pid}", "ftgui-autograph-notapid"]
    finally:
        live.kill()
        live.wait()
        zombie.wait()


def test_the_folder_is_in_the_temporary_folder_and_named_after_the_pid():
    import tempfile
    from pathlib import Path

    assert autograph_folder(1234) == Path(tempfile.gettempdir()) / "ftgui-autograph-1234"


def _is_zombie(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_only_a_private_folder_of_this_user_is_used(tmp_path):
    from ftgui.core.supervision.processes import own_private_folder

    fresh = tmp_path / "fresh"
    assert own_private_folder(fresh) and (fresh.stat().st_mode & 0o777) == 0o700
    assert own_private_folder(fresh)  # it exists, private: kept
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    link = tmp_path / "link"
    link.symlink_to(fresh)
    file = tmp_path / "file"
    file.write_text("")
    assert [own_private_folder(p) for p in (shared, link, file)] == [False, False, False]
