"""Where the tests leave files for a person to look at (browser screenshots, hypothesis's own
files): ``artifacts/`` at the checkout's top, which git ignores. In a read-only checkout (an
instructor's shared install, a course folder the user cannot write) nothing is written into it:
then ``$COURSE_ARTIFACTS`` (``make test`` sets it to the folder it names), else a new folder under
the temporary directory."""
import os
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _choose() -> Path:
    if os.environ.get("COURSE_ARTIFACTS"):
        return Path(os.environ["COURSE_ARTIFACTS"])
    here = ROOT / "artifacts"
    try:
        here.mkdir(exist_ok=True)
        if os.access(here, os.W_OK):
            return here
    except OSError:                        # a read-only checkout
        pass
    return Path(tempfile.mkdtemp(prefix="course-test.")) / "artifacts"


ARTIFACTS = _choose()
