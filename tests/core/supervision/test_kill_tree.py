"""`kill_tree`: every process of a trainer's tree has ended when it returns, and it does not wait
for the reaping of a descendant orphaned by the kill (an init that reaps late stalled the
window)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# Run in a process of its own: it becomes the child subreaper, so the orphaned grandchild is its
# own to reap, and it reaps nothing until kill_tree has returned.
SCRIPT = textwrap.dedent("""
    import ctypes, os, signal, subprocess, sys, time
    import psutil
    from ftgui.core.supervision.processes import kill_tree

    PR_SET_CHILD_SUBREAPER = 36
    assert ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    leader = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time; "
         "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
         "print('ready', flush=True); time.sleep(60)"],
        start_new_session=True, stdout=subprocess.PIPE, text=True)
    assert leader.stdout.readline() == "ready\\n"
    grandchild = psutil.Process(leader.pid).children()[0]
    os.kill(leader.pid, signal.SIGSTOP)  # frozen, as the watchdog finds a hung chief
    kill_tree(leader.pid)
    print(grandchild.status())
    leader.wait()
    os.waitpid(grandchild.pid, 0)
""")


def test_kill_tree_ends_every_process_and_leaves_an_orphan_s_reaping_to_its_reaper():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    # ended (a zombie), not running; and not reaped by kill_tree itself (psutil's wait did,
    # after waiting for the reaper), which left it to the subreaper's `waitpid` here
    assert done.stdout.strip() == "zombie"
