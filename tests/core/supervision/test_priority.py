"""A standby's priority where the kernel refuses to change an autogroup: the process's own nice
value is still set (CI found a session whose autogroup answers EINVAL)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from ftgui.core.supervision import priority

ROOT = os.geteuid() == 0


class RefusingAutogroup:
    """A stand-in for `open` on /proc/<pid>/autogroup whose writes fail with `errnos`, in turn,
    then succeed; `writes` counts the tries."""

    def __init__(self, *errnos: int):
        self.errnos = list(errnos)
        self.writes = 0

    def __call__(self, path, mode="r", encoding=None):
        assert path.endswith("/autogroup") and mode == "w"
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def write(self, text: str) -> None:
        self.writes += 1
        if self.errnos:
            code = self.errnos.pop(0)
            raise OSError(code, os.strerror(code))


@pytest.fixture
def refusing(monkeypatch):
    def install(*errnos):
        fake = RefusingAutogroup(*errnos)
        monkeypatch.setattr(priority, "open", fake, raising=False)
        monkeypatch.setattr(priority.time, "sleep", lambda seconds: None)
        return fake
    return install


def test_an_autogroup_in_the_root_task_group_is_left_as_it_is(refusing):
    fake = refusing(errno.EINVAL)
    priority._set_autogroup(0)
    assert fake.writes == 1


def test_a_rate_limited_autogroup_change_is_tried_once_more(refusing):
    fake = refusing(errno.EAGAIN)
    priority._set_autogroup(0)
    assert fake.writes == 2
    fake = refusing(errno.EAGAIN, errno.EAGAIN)
    with pytest.raises(BlockingIOError):
        priority._set_autogroup(0)
    assert fake.writes == 2


def test_a_process_that_may_not_change_its_autogroup_is_not_restored(refusing):
    refusing(errno.EPERM)
    assert priority.restore() is False


def test_a_restore_the_kernel_keeps_rate_limiting_says_false_and_raises_nothing(refusing):
    fake = refusing(errno.EAGAIN, errno.EAGAIN)
    assert priority.restore() is False  # the standby trains on, at its lower priority
    assert fake.writes == 2


def test_restore_sets_every_thread_to_nice_0_when_the_autogroup_answers_einval(refusing):
    refusing(errno.EINVAL)
    if os.getpriority(os.PRIO_PROCESS, 0) != 0 and not ROOT:
        pytest.skip("this test process runs niced and may not raise itself back")
    assert priority.restore() is True
    tids = [int(t) for t in os.listdir("/proc/self/task")]
    assert {os.getpriority(os.PRIO_PROCESS, t) for t in tids} == {0}


@pytest.mark.skipif(not ROOT, reason="raising a priority back needs root (CAP_SYS_NICE)")
def test_a_standby_lowered_and_restored_where_the_autogroup_answers_einval():
    code = ("import errno, os\n"
            "from ftgui.core.supervision import priority\n"
            "def refuse(*args, **kwargs):\n"
            "    raise OSError(errno.EINVAL, 'Invalid argument')\n"
            "priority.open = refuse\n"
            "priority.lower()\n"
            "low = os.getpriority(os.PRIO_PROCESS, 0)\n"
            "done = priority.restore()\n"
            "print(low, done, os.getpriority(os.PRIO_PROCESS, 0))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.split() == [str(priority.STANDBY_NICE), "True", "0"]
