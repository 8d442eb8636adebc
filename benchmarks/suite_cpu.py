"""Where the test suite's CPU goes: run pytest and sum the CPU of every process it starts, by kind.

    python benchmarks/suite_cpu.py [--by-test N] [-- PYTEST ARGS]   # default: -q -m "tf or slurm"

The suite is CPU-bound (both cores busy), so its time is the CPU of the processes it starts.
Every 0.3 s this script reads the user + system time and command line of each process started
since pytest (its own and any other program's) from /proc; a process's figure is the last one
read (so up to 0.3 s of each is missed, and processes that live under 0.3 s are not seen).
Kinds: trainer, standby (`--standby`), each `ftgui.*` helper module, the pytest processes,
other. Prints the count, total and mean CPU of each kind, and pytest's wall time; with
`--by-test N`, also the N tests whose processes took the most CPU (a process is a test's when
its command line names a folder of the test's `tmp_path`, or a `made_once` folder). Linux
only; ~17 minutes for the `tf` tests on 2 cores.
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import PYTHON, ROOT, header  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def started(pid: int) -> int:
    """When process `pid` started, in clock ticks since boot (/proc/PID/stat field 22)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


def sample(seen: dict, since: int) -> None:
    """Update `seen` {(pid, start time): [command line, CPU seconds]} from /proc with every
    process started at or after `since` (clock ticks since boot)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[19]) < since:
                continue
            key = (pid, fields[19])
            cpu = (int(fields[11]) + int(fields[12])) / TICKS
            if key not in seen:
                seen[key] = [Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " "), cpu]
            seen[key][1] = max(seen[key][1], cpu)
        except (OSError, IndexError):
            pass  # gone meanwhile


def kind(command: str) -> str:
    """The kind of a process from its command line."""
    module = re.search(r"-m (ftgui[\w.]*)", command)
    if module:
        if module.group(1) == "ftgui.training":
            return "standby" if "--standby" in command else "trainer"
        return module.group(1)
    if "pytest" in command or "exec(eval(sys.stdin.readline()))" in command:
        return "pytest (main and xdist workers)"
    return "other: " + (command.split(" ", 1)[0][-40:] if command.strip() else "(no command line)")


def test_of(command: str) -> str | None:
    """The test folder a process's command line names: `made-once/NAME`, or a `tmp_path`'s
    name (pytest cuts it to 30 characters and adds a number), or None."""
    found = re.search(r"/pytest-\d+/(?:popen-gw\d+/)?(made-once/[^/\s\"]+|[^/\s\"]+)", command)
    return found.group(1) if found else None


def print_by_test(seen: dict, count: int) -> None:
    """The `count` tests whose processes took the most CPU, with their processes by kind."""
    tests: dict = collections.defaultdict(lambda: [0.0, collections.Counter()])
    for command, cpu in seen.values():
        name = test_of(command)
        if name is not None and not kind(command).startswith("pytest"):
            tests[name][0] += cpu
            tests[name][1][kind(command)] += 1
    print(f"\n   the {count} tests whose processes took the most CPU "
          f"({sum(cpu for cpu, _ in tests.values()):.0f} s in {len(tests)} tests):")
    for name, (cpu, kinds) in sorted(tests.items(), key=lambda item: -item[1][0])[:count]:
        processes = ", ".join(f"{n} {k}" for k, n in kinds.most_common())
        print(f"   {cpu:7.1f} s  {name:42s} {processes}")


def main() -> None:
    args = sys.argv[1:]
    by_test = 0
    if args[:1] == ["--by-test"]:
        by_test, args = int(args[1]), args[2:]
    args = args[1:] if args[:1] == ["--"] else args
    header("suite_cpu: the CPU of the processes the test suite starts")
    argv = [PYTHON, "-m", "pytest", *(args or ["-q", "-m", "tf or slurm"])]
    print(f"   {' '.join(argv)}", flush=True)
    seen: dict = {}
    began = time.perf_counter()
    pytest = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    since = started(pytest.pid)
    while pytest.poll() is None:
        sample(seen, since)
        time.sleep(0.3)
    wall = time.perf_counter() - began
    totals: dict = collections.defaultdict(lambda: [0, 0.0])
    for command, cpu in seen.values():
        totals[kind(command)][0] += 1
        totals[kind(command)][1] += cpu
    everything = sum(cpu for _, cpu in totals.values())
    print(f"\n   pytest exit {pytest.returncode}, wall {wall:.0f} s; CPU seen {everything:.0f} s "
          f"({everything / wall:.2f} cores on average)")
    for name, (count, cpu) in sorted(totals.items(), key=lambda item: -item[1][1]):
        if cpu >= 1:
            print(f"   {cpu:8.0f} s  {100 * cpu / everything:5.1f} %  {count:4d} processes  "
                  f"{cpu / count:6.2f} s each  {name}")
    if by_test:
        print_by_test(seen, by_test)


if __name__ == "__main__":
    main()
