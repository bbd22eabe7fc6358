"""What a submission's processes use, read from /proc by the grader: CPU, waiting, memory.

Used by ``grading.sandbox`` and ``grading.session``. Not taught. The submission is every process
below the first one of its sandbox (bubblewrap's, PID 1 of the sandbox's PID namespace: a
process whose parent ends is adopted by it, so a double fork stays in the tree). Every number is
the kernel's, read from outside the sandbox: nothing the submission sends or says changes it.
"""
from __future__ import annotations

import dataclasses
import os

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclasses.dataclass
class Usage:
    cpu: float = 0.0          # CPU seconds (user + system) of every process, and of the children they waited for
    waiting: float = 0.0      # seconds its threads were ready to run but waited for a CPU (a loaded machine)
    memory: int = 0           # bytes of memory it holds: private and shared-memory pages, shared ones split
    processes: int = 0


def processes(root: int) -> list[int]:
    """``root`` and every process below it (children of every thread)."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found.append(pid)
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children", "rb") as children:
                    todo += [int(c) for c in children.read().split()]
        except (OSError, ValueError):
            continue
    return found


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / CLOCK_TICKS          # utime stime cutime cstime


def _waiting(pid: int) -> float:
    """Seconds the threads of ``pid`` spent runnable but not running (/proc/PID/task/TID/schedstat:
    on-CPU ns, run-queue ns, time slices)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat", "rb") as schedstat:
                total += int(schedstat.read().split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def _memory(pid: int) -> int:
    """Proportional anonymous + shared-memory bytes of ``pid`` (smaps_rollup: a page shared by
    n processes counts 1/n in each), else resident ones (status)."""
    wanted = (b"Pss_Anon:", b"Pss_Shmem:")
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as rollup:
            lines = [line for line in rollup if line.startswith(wanted)]
        if len(lines) == 2:
            return sum(int(line.split()[1]) for line in lines) * 1024
    except OSError:
        pass
    with open(f"/proc/{pid}/status", "rb") as status:
        return sum(int(line.split()[1]) for line in status if line.startswith((b"RssAnon:", b"RssShmem:"))) * 1024


def usage(root: int, memory: bool = False) -> Usage:
    """What the tree of ``root`` uses now (its memory only when asked: slower to read)."""
    total = Usage()
    for pid in processes(root):
        try:
            total.cpu += _cpu(pid)
            total.waiting += _waiting(pid)
            if memory:
                total.memory += _memory(pid)
            total.processes += 1
        except (OSError, ValueError, IndexError):      # it ended meanwhile
            continue
    return total
