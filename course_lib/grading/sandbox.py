"""One sandbox per submission: bubblewrap's namespaces around the submission's process.

Used by ``grading.session`` (the grader's side of a submission). Not taught. Each submission
runs ``python -I -m course_lib.grading.learner FD`` inside ``bwrap`` (bubblewrap, the sandbox
Flatpak uses) with:

* new user, PID, IPC, network, UTS and cgroup namespaces, and no further user namespaces
  inside: the submission sees only its own processes (not the grader's command line), has
  only a loopback network, and its SysV / POSIX IPC objects vanish with it;
* a filesystem of its own: read-only /usr, the Python install, the venv, the ``course_lib``
  package and its ``data/``; a private /tmp (its working folder) and /dev/shm of ``disk_bytes``
  each, the only places it can write; a fresh /proc and a minimal, read-only /dev. No
  checkout, no solutions, no other submission, no gradebook, no home folder;
* an environment of its own (:func:`sandbox_env`), bwrap's included (it is PID 1 inside);
* a seccomp filter (``grading.seccomp``): one process (threads allowed), and no memory that
  its per-process limit does not count (SysV and anonymous shared memory, memory files);
* as root: an unprivileged uid/gid of its own (61000… one per grading process, claimed with
  a lock file, so two submissions graded side by side never share one), bwrap itself running
  as that uid (:func:`as_user`); as a normal user: that user's uid, mapped into the new user
  namespace;
* the process limit, memory, file size and CPU limits are set by the learner process itself,
  inside the new user namespace, before any learner code runs (``learner.confine``); the
  grader counts the CPU time and memory of all its processes together (``grading.usage``).

When bwrap is missing, :func:`require_bwrap` says how to install it. When the kernel refuses
the namespaces (no unprivileged user namespaces), :func:`probe` returns what runs instead (a
separate process with limits) and the grader prints it in one line.
"""
from __future__ import annotations

import dataclasses
import fcntl
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile

BASE_UID = 61000                # a submission runs as uid/gid 61000… when the grader is root
UIDS = 1000                     # how many such uids graders on one machine may use at once
_claimed: list = []             # the lock file that keeps this process's uid its own
NAMESPACES = "new user, PID, IPC, network and mount namespaces"
RUNTIME_BYTES = 1 << 30         # what Python, torch and course_lib hold in a sandbox before its code runs, with room


@dataclasses.dataclass
class Limits:
    """A submission's budgets (``grading.session`` keeps the time ones; the sandbox and
    ``learner.confine`` the others); here, free of torch, so the grader's own process never imports it."""
    call_seconds: float = 10.0            # CPU seconds of one call of the learner's function
    exercise_seconds: float = 60.0        # CPU seconds of all calls of one exercise's check
    cell_seconds: float = 120.0           # CPU seconds of one cell of the notebook
    submission_seconds: float = 1800.0    # CPU seconds of the whole submission (RLIMIT_CPU: the process ends)
    memory_bytes: int = 4 << 30           # data (heap, anonymous maps) the submission may add to its imports'
    file_bytes: int = 64 << 20            # largest file it may write
    disk_bytes: int = 256 << 20           # its private /tmp (and /dev/shm), each
    processes: int = 64                   # threads (its one process included; new processes are refused)
    files: int = 10_000                   # files, folders and links in /tmp and /dev/shm together

    def sandbox_bytes(self) -> int:
        """What the whole sandbox may hold, for a memory cgroup around it: ``memory_bytes``, its
        two tmpfs folders, and :data:`RUNTIME_BYTES`."""
        return self.memory_bytes + 2 * self.disk_bytes + RUNTIME_BYTES


class MissingBwrap(RuntimeError):
    """bubblewrap is not installed."""


def require_bwrap() -> str:
    """The path of ``bwrap``, or :class:`MissingBwrap` saying how to install it."""
    path = os.environ.get("COURSE_GRADER_BWRAP") or shutil.which("bwrap")
    if not path or not os.access(path, os.X_OK):
        raise MissingBwrap(
            "the grader runs each submission in a bubblewrap sandbox, and `bwrap` is not installed: "
            "install it with `sudo apt-get install bubblewrap` (Debian/Ubuntu), `sudo dnf install "
            "bubblewrap` (Fedora) or your system's package manager, then run the same command again")
    return path


def claim_uid() -> int:
    """The uid a submission runs as: this process's own when it is not root; as root, a uid in
    61000…61999 no other grader process on this machine is using (an exclusive lock on a file
    per uid, held until this process ends)."""
    if os.getuid() != 0:
        return os.getuid()
    for uid in range(BASE_UID, BASE_UID + UIDS):
        handle = open(os.path.join(tempfile.gettempdir(), f"course-grader-uid-{uid}.lock"), "a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _claimed.append(handle)
        return uid
    raise RuntimeError(f"all uids {BASE_UID}…{BASE_UID + UIDS - 1} are in use by other graders")


def runtime_paths() -> list[str]:
    """What the submission's process needs to read, outside /usr: the Python install, the venv,
    the course_lib package and its data/ (outermost paths only, each read-only)."""
    import course_lib
    from ..data import data_dir
    paths = {os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix)} | {
        os.path.abspath(p) for p in (sys.prefix, sys.exec_prefix)}
    paths |= {os.path.dirname(os.path.abspath(course_lib.__file__)), os.path.abspath(data_dir())}
    paths = {p for p in paths if not (p == "/usr" or p.startswith("/usr/"))}
    return sorted(p for p in paths if not any(p != q and p.startswith(q + os.sep) for q in paths))


def as_user(bwrap: str, uid: int, gid: int, paths, own_pids: bool = False) -> list[str]:
    """From root: the command prefix that runs what follows as ``uid``/``gid``, able to reach
    ``paths`` even when a folder above one is closed to others (Python under /root/.pyenv, /root
    being 0700): in a mount namespace of its own (an outer bwrap) that folder is a tmpfs
    holding just the needed child, bound from the real one. Nothing changes outside it. The
    outer bwrap dies with its parent; with ``own_pids`` it has a PID namespace of its own, which
    ends with it, so nothing it runs outlives it (a change of uid clears a parent-death signal).
    Its /proc stays the host's (a fresh one there would stop a sandbox inside from mounting its own)."""
    args = [bwrap, "--dev-bind", "/", "/", "--die-with-parent"] + ["--unshare-pid"] * own_pids
    for path in sorted({os.path.abspath(p) for p in paths}):
        parts = path.split(os.sep)[1:]
        for depth in range(1, len(parts)):
            closed = os.sep + os.path.join(*parts[:depth])
            child = os.path.join(closed, parts[depth])
            if os.stat(closed).st_mode & 0o001 == 0:
                args += ["--tmpfs", closed, "--dev-bind", child, child]
                break
    setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
    return args + ["--", setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]


def bwrap_command(bwrap: str, uid: int, disk_bytes: int, info_fd: int | None = None,
                  seccomp_fd: int | None = None) -> list[str]:
    """The command that builds a submission's sandbox (the learner's command follows it). As
    root, bwrap itself runs as ``uid`` (:func:`as_user`): a bwrap run by root does not enforce
    the sandbox's process limit. ``seccomp_fd``: a pipe holding :func:`seccomp_filter`."""
    from ..data import data_dir
    args = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
            "--ro-bind", "/usr", "/usr"]
    if os.getuid() == 0:
        args = as_user(bwrap, uid, uid, runtime_paths(), own_pids=True) + args
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = "/" + top
        if os.path.islink(path):                              # merged /usr: /lib -> usr/lib
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
             "--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]   # torch reads the CPU's features
    # /dev/zero cannot be opened (a device node bound without devices): a shared map of it would
    # be shared memory that RLIMIT_DATA does not count
    args += ["--proc", "/proc", "--dev", "/dev", "--ro-bind", "/dev/null", "/dev/zero",
             "--size", str(disk_bytes), "--tmpfs", "/tmp", "--size", str(disk_bytes), "--tmpfs", "/dev/shm"]
    for path in runtime_paths():              # after the private /tmp: a venv or checkout under /tmp stays visible
        args += ["--ro-bind", path, path]
    # /dev read-only (its device nodes still work; not /dev/shm, a mount of its own): bwrap's
    # /dev is a tmpfs without a size
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp", "--clearenv"] + ["--info-fd", str(info_fd)] * (info_fd is not None)
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    for name, value in sandbox_env("/tmp", str(data_dir())).items():
        args += ["--setenv", name, value]
    return args


def sandbox_env(home: str, data: str) -> dict:
    """The submission's environment: none of the grader's variables."""
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home, "TMPDIR": home, "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": os.path.join(home, ".matplotlib"), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "COURSE_DATA_DIR": data}


def _seccomp_pipe() -> int | None:
    """A pipe's read end holding :func:`seccomp_filter` (bwrap reads it once), or None."""
    from .seccomp import seccomp_filter
    program = seccomp_filter()
    if program is None:
        return None
    read, write = os.pipe()
    os.write(write, program)                  # a few hundred bytes: far below a pipe's buffer
    os.close(write)
    return read


def pipe_contents(fd: int, limit: int = 1 << 16) -> bytes:
    """What the pipe ``fd`` holds now (up to ``limit`` bytes), without waiting for more."""
    chunks, size = [], 0
    while size < limit and select.select([fd], [], [], 0)[0]:
        chunk = os.read(fd, limit - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


class Sandbox:
    """A running submission process; ``sock`` is the grader's end of its connection."""

    def __init__(self, uid: int, disk_bytes: int, namespaces: bool, memory_bytes: int | None = None):
        """``memory_bytes``: the limit of a memory cgroup around the whole sandbox, where one can
        be made (``grading.cgroup``)."""
        import socket
        from . import cgroup
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        learner = [sys.executable, "-I", "-m", "course_lib.grading.learner", str(theirs.fileno())]
        self.cgroup = None
        if namespaces:
            from ..data import data_dir
            seccomp = _seccomp_pipe()
            self.cgroup = cgroup.make(memory_bytes) if memory_bytes else None
            command = cgroup.join_command(self.cgroup, bwrap_command(require_bwrap(), uid, disk_bytes, None, seccomp) + learner)
            try:       # bwrap's own environment too: it is PID 1 inside, and /proc/1/environ shows it
                self.process = subprocess.Popen(command, pass_fds=[theirs.fileno()] + [seccomp] * (seccomp is not None),
                                                cwd="/", env=sandbox_env("/tmp", str(data_dir())),
                                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.PIPE)
            finally:
                if seccomp is not None:
                    os.close(seccomp)
            self.tmp = None
        else:                                     # the kernel refused the namespaces (said once, in the summary)
            from ..data import data_dir
            self.tmp = tempfile.mkdtemp(prefix="submission-")
            user = {"user": uid, "group": uid, "extra_groups": []} if os.getuid() == 0 else {}
            if user:
                os.chown(self.tmp, uid, uid)
            self.process = subprocess.Popen(learner, pass_fds=[theirs.fileno()], cwd=self.tmp,
                                            env=sandbox_env(self.tmp, str(data_dir())), start_new_session=True,
                                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.PIPE, **user)
        self.root_pid = self.process.pid         # the submission: every process below it (bwrap's too)
        self.learner_pid = None                  # the learner's own (:meth:`files`)
        theirs.close()

    def usage(self, memory: bool = False):
        """What the submission's processes use now (``grading.usage``): CPU seconds, seconds spent
        waiting for a CPU, memory. Machine load does not change the CPU seconds."""
        from .usage import usage
        return usage(self.root_pid, memory)

    def cpu_seconds(self) -> float:
        return self.usage().cpu

    def files(self) -> int:
        """Files, folders and links in the sandbox's /tmp and /dev/shm together (their inodes:
        kernel memory that no tmpfs size bounds), read through its learner's process: the
        deepest one of the sandbox, found once it has started (it cannot start another);
        0 without namespaces or once it has ended."""
        from .usage import processes
        if self.tmp is not None:
            return 0
        if self.learner_pid is None:
            self.learner_pid = processes(self.root_pid)[-1]
        try:
            return sum(_inodes_used(f"/proc/{self.learner_pid}/root{folder}") for folder in ("/tmp", "/dev/shm"))
        except OSError:
            return 0

    def error_text(self) -> str:
        """What bwrap printed when it could not start (its first line), or the last line of the
        traceback the learner's Python printed (the error itself), else ''. Called when the
        connection broke: a process that is ending gets a moment to end, so its words are read;
        only what its stderr holds by then is read (a process it started may keep that pipe
        open, and never write)."""
        if self.process.stderr is None:
            return ""
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return ""
        lines = pipe_contents(self.process.stderr.fileno()).decode("utf-8", "replace").strip().splitlines()
        if lines and lines[0].startswith("Traceback (most recent call last)"):
            return lines[-1]
        return lines[0] if lines else ""

    def kill(self) -> None:
        """End the submission's process and everything it started (its PID namespace ends with it)."""
        from .usage import processes
        for pid in processes(self.root_pid) if self.tmp is None else [self.root_pid]:
            try:
                os.kill(pid, signal.SIGKILL) if self.tmp is None else os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if self.process.stderr is not None:
            self.process.stderr.close()
        self.sock.close()
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
        from . import cgroup
        cgroup.remove(self.cgroup)
        self.cgroup = None


def _inodes_used(folder: str) -> int:
    found = os.statvfs(folder)
    return found.f_files - found.f_ffree


def probe(uid: int, disk_bytes: int) -> tuple[bool, str]:
    """(namespaces?, one line saying the isolation achieved): a sandbox that runs ``true``."""
    bwrap = require_bwrap()
    seccomp = _seccomp_pipe()
    command = bwrap_command(bwrap, uid, disk_bytes, None, seccomp) + ["/bin/true"]
    try:
        run = subprocess.run(command, pass_fds=[seccomp] * (seccomp is not None), capture_output=True,
                             text=True, timeout=60, env=sandbox_env("/tmp", "/tmp"))
    finally:
        if seccomp is not None:
            os.close(seccomp)
    who = f"uid {uid}" if os.getuid() == 0 else f"your uid {uid} mapped into the namespace"
    if run.returncode == 0:
        from .seccomp import seccomp_filter
        processes = "one process: new ones refused" if seccomp_filter() else "a thread limit (no seccomp filter for this CPU)"
        return True, (f"each submission in its own bubblewrap sandbox ({NAMESPACES}; read-only runtime, "
                      f"private /tmp of {disk_bytes >> 20} MiB, {processes}; {who})")
    why = (run.stderr.strip().splitlines() or [f"exit status {run.returncode}"])[0]
    who = f"uid {uid}" if os.getuid() == 0 else "your user"
    return False, (f"WEAKER ISOLATION: the kernel refused bubblewrap's namespaces ({why}): each submission "
                   f"runs as a separate process with limits only, as {who}, and can read what {who} can read, "
                   f"reach the network and see other processes")
