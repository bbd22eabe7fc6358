"""The sandbox's view of the runtime survives its private /tmp: a checkout, a venv or a Python
installed under /tmp (a CI runner's clone, a throwaway venv) is bound read-only *after* the
private /tmp is mounted, so it stays visible inside (mounted before it, the new /tmp hid it and
every submission 'crashed' with "bwrap: execvp …/python: No such file or directory")."""
import os

import pytest

from course_lib.grading import sandbox


def test_the_runtime_is_bound_after_the_private_tmp_even_when_it_lives_under_tmp(monkeypatch):
    monkeypatch.setattr(sandbox, "runtime_paths", lambda: ["/tmp/course-ci/.venv", "/tmp/course-ci/course_lib"])
    monkeypatch.setattr(os, "getuid", lambda: 1000)          # the command as a normal user builds it
    args = sandbox.bwrap_command("/usr/bin/bwrap", 61000, 1 << 20, 3)
    tmp_at = next(i for i in range(len(args) - 1) if args[i] == "--tmpfs" and args[i + 1] == "/tmp")
    for path in ("/tmp/course-ci/.venv", "/tmp/course-ci/course_lib"):
        bound = [i for i in range(len(args) - 2) if args[i] == "--ro-bind" and args[i + 1] == path]
        assert bound, f"{path} is not bound read-only into the sandbox"
        assert all(i > tmp_at for i in bound), f"{path} is bound before the private /tmp, which hides it"
    assert args.index("--remount-ro") > max(i for i, a in enumerate(args) if a == "--ro-bind")


@pytest.mark.sandbox
@pytest.mark.skipif(not os.path.exists("/usr/bin/bwrap") and not os.path.exists("/bin/bwrap"),
                    reason="bubblewrap is not installed (the grader's own tests say so too)")
def test_a_real_sandbox_sees_the_runtime_under_its_own_tmp(tmp_path):
    """The real bwrap, with this process's runtime: python starts inside and imports course_lib."""
    import subprocess
    import sys
    bwrap = sandbox.require_bwrap()
    read, write = os.pipe()
    args = sandbox.bwrap_command(bwrap, sandbox.BASE_UID, 1 << 24, write)
    run = subprocess.run(args + [sys.executable, "-I", "-c", "import course_lib, sys; print(sys.prefix)"],
                         pass_fds=(write,), capture_output=True, text=True, timeout=120)
    os.close(write)
    os.close(read)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == sys.prefix
