"""A memory cgroup per sandbox, where the system lets the grader make one.

Used by ``grading.sandbox``. Not taught. The kernel then holds everything the submission's
processes use (their memory, shared memory, the pages of its tmpfs folders) under one limit,
with no delay; the grader's own count (``grading.usage``, read four times a second) still
gives the reason in the gradebook. Root can make one below its own memory cgroup (cgroup v1,
or v2 where the grader's cgroup passes the memory controller on); a normal user usually cannot,
and then the grader's count alone is the limit.
"""
from __future__ import annotations

import itertools
import os
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
_count = itertools.count()


def _own() -> tuple[Path, dict] | None:
    """(the folder below which this process may make a memory cgroup, the limit files to write
    as a function of the limit), or None."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:                                   # cgroup v1: "4:memory:/path"
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return ROOT / "memory" / path.lstrip("/"), {"memory.limit_in_bytes": 1, "memory.memsw.limit_in_bytes": 1}
    for line in lines:                                   # cgroup v2: "0::/path"
        if line.startswith("0::"):
            base = ROOT / line[3:].lstrip("/")
            try:
                if "memory" in (base / "cgroup.subtree_control").read_text().split():
                    return base, {"memory.max": 1, "memory.swap.max": 0}
            except OSError:
                return None
    return None


def make(limit: int) -> Path | None:
    """A new memory cgroup limited to ``limit`` bytes (no swap), or None where none can be made."""
    own = _own()
    if own is None:
        return None
    base, files = own
    _sweep(base)
    path = base / f"course-grader-{os.getpid()}-{next(_count)}"
    try:
        path.mkdir()
    except OSError:
        return None
    try:
        for name, scale in files.items():
            if (path / name).exists():
                (path / name).write_text(str(limit * scale))
        return path
    except OSError:
        remove(path)
        return None


def _sweep(base: Path) -> None:
    """Remove the empty cgroups of grader processes that ended without removing theirs (killed)."""
    try:
        left = [p for p in base.glob("course-grader-*-*") if not _running(int(p.name.split("-")[2]))]
    except (OSError, ValueError):
        return
    for path in left:
        try:
            path.rmdir()
        except OSError:
            pass


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def remove(path: Path | None) -> None:
    """Remove the cgroup once its processes have ended (a second at most; left empty otherwise)."""
    if path is None:
        return
    for _ in range(20):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)


def join_command(path: Path | None, command: list[str]) -> list[str]:
    """``command``, run inside the cgroup ``path`` from its first instruction (a shell that
    joins, then becomes the command), or as it is."""
    if path is None:
        return command
    return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(path / "cgroup.procs"), *command]
