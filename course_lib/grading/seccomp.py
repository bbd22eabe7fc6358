"""The sandbox's seccomp filter: what one submission may not ask of the kernel.

Used by ``grading.sandbox`` (bubblewrap's ``--seccomp``). Not taught. A submission is one
process (its threads allowed), so the kernel's per-process memory limit (RLIMIT_DATA, set by
``learner.confine``) holds all the memory it can make, wherever the grader runs (a memory
cgroup or none). The filter refuses, with EPERM (Python: ``PermissionError``):

* new processes: ``fork``, ``vfork``, and ``clone`` without ``CLONE_THREAD`` (``subprocess``,
  ``os.fork``, ``multiprocessing``); ``clone3`` answers ENOSYS, so the C library falls back on
  ``clone``, whose flags the filter can read;
* memory no per-process limit counts: SysV shared memory (``shmget``), memory files
  (``memfd_create``, ``memfd_secret``) and shared anonymous maps (``mmap`` with ``MAP_SHARED``
  and ``MAP_ANONYMOUS``; a map of a file is bounded by its tmpfs folder's size).

A system call of another ABI (x86's 32-bit or x32 calls) ends the process. The program is
classic BPF (struct sock_filter[]), one self-contained block per rule.
"""
from __future__ import annotations

import platform
import struct

# audit architecture, and the numbers of the system calls the rules name
_ARCH = {"x86_64": (0xC000003E, {"shmget": 29, "memfd_create": 319, "memfd_secret": 447, "fork": 57,
                                 "vfork": 58, "clone": 56, "clone3": 435, "mmap": 9}),
         "aarch64": (0xC00000B7, {"shmget": 194, "memfd_create": 279, "memfd_secret": 447,
                                  "clone": 220, "clone3": 435, "mmap": 222})}
REFUSED = ("shmget", "memfd_create", "memfd_secret", "fork", "vfork")

CLONE_THREAD = 0x10000
MAP_SHARED, MAP_ANONYMOUS = 0x01, 0x20

LD, JEQ, JGE, JSET, AND, RET = 0x20, 0x15, 0x35, 0x45, 0x54, 0x06   # BPF_LD|W|ABS, BPF_JMP|…|K, BPF_ALU|AND|K, BPF_RET|K
ALLOW, KILL = 0x7FFF0000, 0x80000000                                 # SECCOMP_RET_ALLOW, _KILL_PROCESS
EPERM, ENOSYS = 0x00050000 | 1, 0x00050000 | 38                      # SECCOMP_RET_ERRNO | errno
NR, ARCH = 0, 4                                                      # offsets in struct seccomp_data


def _arg(i: int) -> int:
    """Offset of the low 32 bits of system call argument ``i`` (little-endian machines)."""
    return 16 + 8 * i


def seccomp_filter(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (this one by default); None on an architecture it does not
    know (the limits then count private memory only, and processes are not refused)."""
    arch = _ARCH.get(machine or platform.machine())
    if arch is None:
        return None
    audit, numbers = arch
    prog = [(LD, 0, 0, ARCH), (JEQ, 1, 0, audit), (RET, 0, 0, KILL),   # another ABI: end the process
            (LD, 0, 0, NR), (JGE, 0, 1, 0x40000000), (RET, 0, 0, EPERM)]   # x32 calls: refused
    for name in REFUSED:
        if name in numbers:
            prog += [(JEQ, 0, 1, numbers[name]), (RET, 0, 0, EPERM)]
    prog += [(JEQ, 0, 1, numbers["clone3"]), (RET, 0, 0, ENOSYS)]
    # clone: a thread (CLONE_THREAD, which the kernel allows only with a shared address space) or refused
    prog += [(JEQ, 0, 4, numbers["clone"]), (LD, 0, 0, _arg(0)), (JSET, 0, 1, CLONE_THREAD),
             (RET, 0, 0, ALLOW), (RET, 0, 0, EPERM)]
    # mmap: refused when both MAP_SHARED and MAP_ANONYMOUS are set (shared memory outside RLIMIT_DATA)
    both = MAP_SHARED | MAP_ANONYMOUS
    prog += [(JEQ, 0, 5, numbers["mmap"]), (LD, 0, 0, _arg(3)), (AND, 0, 0, both), (JEQ, 0, 1, both),
             (RET, 0, 0, EPERM), (RET, 0, 0, ALLOW)]
    prog += [(RET, 0, 0, ALLOW)]
    return b"".join(struct.pack("<HBBI", *op) for op in prog)

