"""One digit off anywhere — registry, weight file, a notebook's stored ✓ line — fails, naming the figure.

Every mutation is made on a COPY: ``data/`` is copied to a temporary folder and the course
pointed at it with ``COURSE_DATA_DIR`` (read by ``course_lib.data``, so the
checks run in a fresh Python process); notebooks are copied before one digit of their stored
output is changed. The real files are never touched.

The registry sweep runs in this process on the real computed values: for every printed number
of the offline toy, sampling and lab figures, an expected value one unit off in its last printed
place must make ``check_figure`` raise a ``FigureMismatch`` that names the figure.
"""
import copy
import json
import math
import os
import re
import shutil
import stat
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from course_lib.figures import registry as F

pytestmark = pytest.mark.planted          # planted wrong digits: make test-all

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable

# Values whose registry tolerance is wider than one printed unit on purpose (and says why in
# its tol_reason): a one-digit change there is inside the band by design.
STATISTICAL_BANDS = {("interface.draws", "frequencies")}


def course_env(data_dir: Path | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "COURSE_FIGURE_LOG"}
    if data_dir is not None:
        env["COURSE_DATA_DIR"] = str(data_dir)
    return env


def writable_copy(source: Path, target: Path, ignore=None) -> Path:
    """``source`` copied to ``target``, every copied file and folder writable by its owner: in a
    read-only checkout the copies would keep the read-only mode and could not be changed."""
    shutil.copytree(source, target, ignore=ignore, copy_function=shutil.copyfile)
    for path in (target, *target.rglob("*")):
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return target


def copy_of_data(tmp_path: Path) -> Path:
    return writable_copy(ROOT / "data", tmp_path / "data")


def run_python(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


CHECK_TOY_FIGURES = """
from course_lib.figures import check_figure, compute, load_registry
from course_lib.figures.registry import registry_path
print("registry:", registry_path())
for figure_id in load_registry():
    if figure_id.startswith("interface.toy."):
        check_figure(figure_id, **compute(figure_id))
"""


def one_unit(decimals) -> Decimal:
    return Decimal(1).scaleb(-decimals)


# --- 1. the registry ------------------------------------------------------------------------

def test_the_real_registry_passes_on_a_copy(tmp_path):
    """The subprocess set-up itself: an unchanged copy of data/ reproduces every toy figure."""
    data = copy_of_data(tmp_path)
    done = run_python(CHECK_TOY_FIGURES, course_env(data))
    assert done.returncode == 0, done.stderr
    assert f"registry: {data / 'figures.json'}" in done.stdout


def test_one_digit_off_in_a_registry_copy_fails_naming_figure_and_entry(tmp_path):
    data = copy_of_data(tmp_path)
    registry = json.loads((data / "figures.json").read_text(encoding="utf-8"))
    spec = registry["interface.toy.attention"]["values"]["weights"]
    row = spec["expected"][2]
    row[0] = float(Decimal(repr(row[0])) + one_unit(spec["decimals"]))        # 0.4683 -> 0.4684
    (data / "figures.json").write_text(json.dumps(registry, ensure_ascii=False, indent=1), encoding="utf-8")

    done = run_python(CHECK_TOY_FIGURES, course_env(data))
    assert done.returncode != 0
    assert "FigureMismatch: interface.toy.attention · weights does not reproduce the article" in done.stderr
    assert 'data/figures.json → "interface.toy.attention" → values → "weights"' in done.stderr
    assert "[2][0]" in done.stderr and "0.4684" in done.stderr


def mutations(expected, decimals):
    """(where, mutated expected value) for each number of ``expected``: one unit of the last
    printed place up and down (full floats: the last digit of their repr)."""
    if isinstance(expected, list):
        for i, item in enumerate(expected):
            for where, mutated in mutations(item, decimals):
                out = copy.deepcopy(expected)
                out[i] = mutated
                yield f"[{i}]{where}", out
        return
    if isinstance(expected, bool):
        yield "", not expected
    elif isinstance(expected, int):
        yield "", expected + 1
        yield "", expected - 1
    elif isinstance(expected, float):
        text = repr(expected)
        if decimals is None:           # the article's full float: change its last digit
            unit = Decimal(1).scaleb(Decimal(text).as_tuple().exponent)
        else:
            unit = one_unit(decimals)
        for sign in (1, -1):
            mutated = float(Decimal(text) + sign * unit)
            if mutated == expected:        # 17 digits can name the same double: take the next one
                mutated = math.nextafter(expected, sign * math.inf)
            yield "", mutated


def computed_figures() -> dict:
    """figure id -> computed values, for every offline figure whose computer needs no argument
    (the toy, sampling and lab figures among them)."""
    from course_lib.figures.computers import computed_figures as every_offline_figure
    return every_offline_figure()


@pytest.mark.slow
def test_every_printed_number_one_unit_off_in_the_registry_fails(monkeypatch, capsys):
    real = F.load_registry()
    computed = computed_figures()
    for figure_id, values in computed.items():          # the unchanged registry holds
        F.check_figure(figure_id, **values)
    checked = 0
    passed = {}                 # "id · name[i]" -> the mutated expected values that still passed
    for figure_id, values in computed.items():
        for name, value in values.items():
            spec = real[figure_id]["values"][name]
            if (figure_id, name) in STATISTICAL_BANDS:
                continue
            for where, mutated in mutations(spec["expected"], spec.get("decimals")):
                fake = copy.deepcopy(real)
                fake[figure_id]["values"][name]["expected"] = mutated
                monkeypatch.setattr(F, "load_registry", lambda fake=fake: fake)
                checked += 1
                try:
                    F.check_figure(figure_id, **{name: value})
                except F.FigureMismatch as mismatch:
                    assert str(mismatch).startswith(f"{figure_id} · {name} does not reproduce"), str(mismatch)
                    assert f'"{figure_id}" → values → "{name}"' in str(mismatch)
                else:
                    passed.setdefault((figure_id, name, where), []).append(mutated)
                monkeypatch.undo()
    capsys.readouterr()
    assert checked > 150
    # Only a documented one-unit band (a tol_reason, tol ≤ one printed unit) may accept a value
    # one unit off, and then only on one side: the other side must still fail.
    wrong = []
    for (figure_id, name, where), values in passed.items():
        spec = real[figure_id]["values"][name]
        band = "tol_reason" in spec and F.tolerance(spec) <= float(one_unit(spec["decimals"])) * (1 + 1e-9)
        if not band or len(values) > 1:
            wrong.append(f"{figure_id} · {name}{where}: still passes with registry value(s) {values}")
    assert not wrong, "registry values that still pass one printed unit off:\n" + "\n".join(wrong)


def test_the_sweep_covers_every_offline_figure_with_printed_decimals():
    covered = set(computed_figures())
    with_decimals = {fid for fid, e in F.load_registry().items()
                     if not e["needs_pretrained_weights"]
                     and any("decimals" in s and s.get("source") != "course" for s in e["values"].values())}
    assert with_decimals - covered == set()


# --- 2. a weight file -----------------------------------------------------------------------

def one_digit_changed(text: str, table: str) -> tuple[str, str, str]:
    """``text`` with the first decimal digit of the first non-zero entry of ``table`` changed."""
    tables = json.loads(text)["tables"]
    flat = tables[table]
    while isinstance(flat[0], list):
        flat = [x for row in flat for x in row]
    start = text.index(f'"{table}"')
    for value in flat:
        if value == 0:
            continue
        literal = repr(value) if not float(value).is_integer() else str(int(value))
        match = re.compile(r"(?<![\d.])" + re.escape(literal) + r"(?![\d.])").search(text, start)
        if not match or "." not in literal:
            continue
        dot = match.start() + literal.index(".")
        digit = text[dot + 1]
        new_digit = str((int(digit) + 1) % 10)
        mutated = text[:dot + 1] + new_digit + text[dot + 2:]
        return mutated, literal, literal.replace("." + digit, "." + new_digit, 1)
    raise AssertionError(f"no entry with decimals in {table}")


@pytest.mark.slow
def test_one_digit_off_in_a_weight_file_copy_fails_naming_a_figure(tmp_path):
    data = copy_of_data(tmp_path)
    path = data / "five_token_model.json"
    text = path.read_text(encoding="utf-8")
    table = "lm_head.bias" if '"lm_head.bias"' in text else next(iter(json.loads(text)["tables"]))
    mutated, old, new = one_digit_changed(text, table)
    path.write_text(mutated, encoding="utf-8")
    assert json.loads(mutated)["tables"] != json.loads(text)["tables"]

    done = run_python(CHECK_TOY_FIGURES, course_env(data))
    assert done.returncode != 0, f"{table}: {old} -> {new} changed no figure"
    found = re.search(r"FigureMismatch: (interface\.toy\.[a-z0-9_.]+) · (\w+) does not reproduce", done.stderr)
    assert found, done.stderr[-3000:]
    assert "data/five_token_model.json was solved so that this figure prints the article's digits" in done.stderr
    assert "changed since the weights were derived" in done.stderr
    assert (ROOT / "data" / "five_token_model.json").read_text(encoding="utf-8") == text   # the real file untouched


# --- 3. a notebook's stored output ----------------------------------------------------------

def change_last_digit_of_a_check_line(nb: dict) -> tuple[str, str]:
    """Change the last digit of the first ✓ line that prints a decimal number (else of the first
    ✓ line ending in a digit); returns (figure id, the changed line).

    The Checks cell shows one summary line in HTML with the ✓ lines folded away; every ✓ line is
    in its ``text/plain`` (``course_lib.ui.checks``). Only that text is changed here, so nbval
    failing proves it compares the stored ✓ lines one by one."""
    for wanted in (r"\d\.\d", r"\d"):
        for cell in nb["cells"]:
            for output in cell.get("outputs", []):
                if output.get("output_type") == "stream":
                    holder, key = output, "text"
                elif "text/plain" in output.get("data", {}):
                    holder, key = output["data"], "text/plain"
                else:
                    continue
                lines = holder[key]
                lines = lines if isinstance(lines, list) else lines.splitlines(keepends=True)
                for i, line in enumerate(lines):
                    found = re.match(r"✓ ([a-z0-9_.]+) · \w+ = .*?(\d)(\D*)$", line.rstrip("\n"))
                    if found and re.search(wanted, line):
                        end = found.start(2)
                        new = line[:end] + str((int(found.group(2)) + 1) % 10) + line[end + 1:]
                        lines[i] = new
                        holder[key] = lines
                        return found.group(1), new
    raise AssertionError("no ✓ line with a number in the notebook's outputs")


@pytest.mark.slow
def test_one_digit_off_in_a_stored_check_line_fails_nbval_naming_the_figure(tmp_path):
    original = ROOT / "notebooks" / "06_loss.ipynb"
    nb = json.loads(original.read_text(encoding="utf-8"))
    figure_id, line = change_last_digit_of_a_check_line(nb)
    # the changed line is in the Checks cell's text/plain, behind its one summary line
    last = [c for c in nb["cells"] if c["cell_type"] == "code"][-1]
    assert any(line in "".join(o.get("data", {}).get("text/plain", [])) for o in last["outputs"]), line
    copy_path = tmp_path / "06_loss_one_digit_off.ipynb"
    copy_path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    done = subprocess.run(
        [PYTHON, "-m", "pytest", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider", "-p", "no:xdist",
         "--nbval-sanitize-with", str(ROOT / ".ci" / "nbval_sanitize.cfg"),
         "-o", "verbosity_assertions=2",       # as make test runs nbval: whole lines in the diff
         "-q", str(copy_path)],
        cwd=ROOT, env=course_env(), capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-2000:]
    assert "1 failed" in output, output[-2000:]
    # the differing ✓ line is shown whole, figure id included, on a line of the diff
    assert re.search(r"^\s*[-+] " + re.escape(line.strip()) + "$", output, re.M), output[-3000:]
    assert figure_id in line
