"""`make lab` gives its venv JupyterLab defaults (an overrides.json in the venv's app settings
folder) under which JupyterLab neither asks at a learner's first start whether to fetch Jupyter's
news nor fetches news or update checks. Read back through jupyterlab_server's own settings code,
the code JupyterLab serves its settings with; a learner's own settings still win."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

from jupyterlab_server.settings_utils import get_settings

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = Path(sys.prefix) / "share" / "jupyter" / "lab" / "schemas"
NOTIFICATION = "@jupyterlab/apputils-extension:notification"


def defaults(app_settings: Path, user_settings: Path) -> dict:
    """What JupyterLab's notification settings hold: the schema's defaults, with the app's
    overrides applied, then the user's own settings."""
    found, _ = get_settings(str(app_settings), str(SCHEMAS), str(user_settings), schema_name=NOTIFICATION)
    props = found["schema"]["properties"]
    return {name: found["settings"].get(name, props[name]["default"]) for name in ("fetchNews", "checkForUpdates")}


def made_overrides(tmp_path: Path) -> Path:
    """The Makefile's overrides.json, made by make in a copy of the Makefile (no venv needed)."""
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    target = ".venv/share/jupyter/lab/settings/overrides.json"
    subprocess.run(["make", "--no-print-directory", "-s", target], cwd=tmp_path, check=True, timeout=60)
    return tmp_path / target


def test_without_the_courses_overrides_jupyterlab_would_ask():
    empty = Path("/nonexistent-course-settings")
    assert defaults(empty, empty)["fetchNews"] == "none"       # "Ask": the pop-up a learner would meet


def test_make_lab_sets_jupyterlab_to_fetch_no_news_and_check_no_updates(tmp_path):
    overrides = made_overrides(tmp_path)
    assert set(json.loads(overrides.read_text())) == {NOTIFICATION}
    assert defaults(overrides.parent, tmp_path / "user") == {"fetchNews": "false", "checkForUpdates": False}


def test_a_learners_own_choice_still_wins(tmp_path):
    overrides = made_overrides(tmp_path)
    user = tmp_path / "user" / "@jupyterlab" / "apputils-extension"
    user.mkdir(parents=True)
    (user / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "true"}))
    assert defaults(overrides.parent, tmp_path / "user")["fetchNews"] == "true"


def test_make_lab_writes_the_overrides_before_starting_jupyterlab():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    lab_rule = next(line for line in makefile.splitlines() if line.startswith("lab:"))
    assert "$(LAB_OVERRIDES)" in lab_rule.split(":", 1)[1]
    assert makefile.index("LAB_OVERRIDES :=") < makefile.index(lab_rule)   # defined before the rule reads it
