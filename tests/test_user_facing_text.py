"""What a user reads states current facts, not the project's history: no issue numbers ("issue
26", "#26"), no work rounds ("the fourth round", "round 3") and no commits of this repository
(a past run's hash) in the READMEs, docs/, the Makefile, the notebooks' text and outputs (both
editions, the solutions too) and course_lib's docstrings, comments and messages. History lives
in `git log`.

What stays allowed: rounding and round-trips, the benchmarks' own measurement rounds
("15 interleaved rounds", `--rounds`), an upstream project's issue (``pytorch#154031``) or
commit (named with its project: see EXTERNAL_IDS), colours such as ``#555``.

A commit hash is a token of 7 to 40 hexadecimal characters with both digits and letters. Inside
a git checkout it is flagged when git knows it as a commit of this repository; elsewhere (an
unpacked archive), every such token is, except the upstream ids listed below.
"""
from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

ISSUE = re.compile(r"\b(?:issues?|PRs?|pull requests?)\s*#?\d+\b|(?:^|(?<=[\s(\[]))#\d{1,5}\b(?![\w-])", re.I)
ORDINAL = (r"first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th)"
           r"|previous|earlier|later")
ROUND = re.compile(rf"\b(?:{ORDINAL})\s+(?:(?:two|three|four|five|few)\s+)?rounds?\b"     # the fourth round
                   r"|\bround\s+\d+\b"                                                    # round 3
                   r"|\b(?:after|in|over)\s+(?:two|three|four|five|six|several|many)\s+rounds\b"
                   r"|第[一二三四五六七八九十\d]+轮", re.I)
HEX = re.compile(r"\b[0-9a-fA-F]{7,40}\b")
# ids of other projects that user-facing text cites on purpose (never this repository's commits)
EXTERNAL_IDS = {
    "607a30d783dfa663caf39e06633721c8d4cfcd7e": "openai-community/gpt2's revision on the Hugging Face Hub",
    "9b63575": "openai/gpt-2's commit of src/sample.py (course_lib.decoding.variants)",
}


def user_facing_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "README.zh-CN.md", ROOT / "Makefile"]
    files += sorted(p for p in (ROOT / "docs").rglob("*") if p.is_file() and "__pycache__" not in p.parts)   # not the
    # bytecode of docs/site/*.py, which a test that imports them may have written by then
    files += sorted(p for p in (ROOT / "course_lib").rglob("*.py"))
    files += sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    return files


def text_lines(path: Path) -> list[tuple[str, str]]:
    """(where, line) for every line a user can read in ``path``: a notebook's markdown and code
    cells and its text outputs (by cell), any other file whole (by line number)."""
    if path.suffix != ".ipynb":
        return [(f"line {n}", line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)]
    found = []
    for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
        texts = [("", "".join(cell["source"]))]
        for output in cell.get("outputs", []):
            if "text" in output:                                          # stream
                texts.append((" output", "".join(output["text"])))
            for mime, data in output.get("data", {}).items():
                if mime.startswith("text/"):
                    texts.append((f" output {mime}", "".join(data) if isinstance(data, list) else data))
            if output.get("output_type") == "error":
                texts.append((" error", f"{output.get('ename')}: {output.get('evalue')}"))
        for part, text in texts:
            for n, line in enumerate(text.splitlines(), 1):
                found.append((f"cell {index} ({cell['cell_type']}{part}) line {n}", line))
    return found


def is_colour(text: str, line: str) -> bool:
    """``#555`` or ``#333333`` in a line that styles something (HTML, CSS, a plot's colours)."""
    return bool(re.fullmatch(r"#(\d{3}|\d{6})", text)) and bool(
        re.search(r"colou?r|border|background|fill|stroke|style", line, re.I))


def hex_tokens(line: str) -> list[str]:
    return [t for t in HEX.findall(line) if re.search(r"\d", t) and re.search(r"[a-fA-F]", t)]


@functools.lru_cache(maxsize=None)
def in_git_checkout() -> bool:
    # safe.directory: a checkout another user owns (a shared, read-only one) is read all the same
    return bool(shutil.which("git")) and subprocess.run(
        ["git", "-c", f"safe.directory={ROOT}", "-C", str(ROOT), "rev-parse", "--git-dir"], capture_output=True).returncode == 0


def git_commits(tokens: set[str], repository: Path = ROOT) -> set[str]:
    """The tokens that name a commit of ``repository`` (one `git cat-file` for all)."""
    if not tokens:
        return set()
    ordered = sorted(tokens)
    out = subprocess.run(["git", "-c", f"safe.directory={repository}", "-C", str(repository), "cat-file", "--batch-check=%(objecttype)"],
                         input="".join(t + "\n" for t in ordered), capture_output=True, text=True,
                         timeout=60, check=True).stdout.splitlines()
    assert len(out) == len(ordered), out
    return {t for t, kind in zip(ordered, out) if kind == "commit" or kind.endswith(" ambiguous")}


def findings(lines: list[tuple[str, str]], commits) -> list[tuple[str, str, str]]:
    """(where, what, the text) for each issue number, work round or commit in ``lines``.
    ``commits(tokens)`` says which hex tokens are commits of this repository (None: every token
    not in EXTERNAL_IDS counts, as outside a git checkout)."""
    tokens = {t for _, line in lines for t in hex_tokens(line)} - set(EXTERNAL_IDS)
    known = tokens if commits is None else commits(tokens)
    found = []
    for where, line in lines:
        for match in ISSUE.finditer(line):
            if not is_colour(match.group(0).strip(), line):
                found.append((where, "an issue number", match.group(0).strip()))
        for match in ROUND.finditer(line):
            found.append((where, "a work round", match.group(0)))
        for token in hex_tokens(line):
            if token in known:
                found.append((where, "a commit hash", token))
    return found


def report(path: Path, found) -> str:
    name = path.relative_to(ROOT).as_posix()
    return "\n".join(f"{name}: {where}: {what}: {text!r}" for where, what, text in found)


@functools.lru_cache(maxsize=None)
def repository_commits() -> frozenset[str] | None:
    """Every hex token of the user-facing files that is a commit here (None outside git)."""
    if not in_git_checkout():
        return None
    tokens = {t for path in user_facing_files() for _, line in text_lines(path) for t in hex_tokens(line)}
    return frozenset(git_commits(tokens - set(EXTERNAL_IDS)))


@pytest.mark.parametrize("path", user_facing_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_history_in_user_facing_text(path):
    known = repository_commits()
    found = findings(text_lines(path), None if known is None else (lambda tokens: tokens & known))
    assert not found, ("words a user reads state current facts: no issue numbers, work rounds or commit "
                       "hashes (history lives in git log)\n" + report(path, found))


# ------------------------------------------------------------------ the checks themselves

def test_a_planted_issue_number_round_and_commit_are_found_and_named(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Install it.\nThe floor moved in issue 12 (see #12).\n"
                    "After the fourth round, and in round 3, nothing changed.\n", encoding="utf-8")
    found = findings(text_lines(page), None)
    assert [(w, what, t) for w, what, t in found] == [
        ("line 2", "an issue number", "issue 12"), ("line 2", "an issue number", "#12"),
        ("line 3", "a work round", "fourth round"), ("line 3", "a work round", "round 3")]
    message = "\n".join(f"page.md: {w}: {what}: {t!r}" for w, what, t in found)
    assert "page.md: line 2: an issue number: 'issue 12'" in message

    notebook = tmp_path / "nb.ipynb"
    notebook.write_text(json.dumps({"cells": [
        {"cell_type": "markdown", "source": ["# Title\n", "as in issue 26\n"], "metadata": {}},
        {"cell_type": "code", "source": ["print(1)"], "metadata": {}, "outputs": [
            {"output_type": "stream", "name": "stdout", "text": ["ok\n", "第四轮 measured it\n"]}]}]}), encoding="utf-8")
    assert findings(text_lines(notebook), None) == [
        ("cell 0 (markdown) line 2", "an issue number", "issue 26"),
        ("cell 1 (code output) line 2", "a work round", "第四轮")]


def test_what_stays_allowed_is_not_flagged():
    lines = [("line 1", text) for text in [
        "python -m course_lib.bench.sampling --rounds 9: 15 interleaved rounds, round by round",
        "each round's course time; the median of the rounds; rounds ≤ 3×",
        "rounded to float32, a round-trip, round(p, 4), round numbers chosen by hand",
        "torch 2.7.0 changed the stream (pytorch#154031); colour #555 and '#ff9f1c'; &#8203;",
        "<div style='border:1px solid #555'>",
        "# 3 rows: a comment", "SHA-256 248dfc3911869ec493c76e65bf2fcf7f615828b0254c12b473182f0f81d3a707",
        "revision 607a30d783dfa663caf39e06633721c8d4cfcd7e", "0x7f3a9c2b10d0 at an address",
    ]]
    assert findings(lines, None) == []


def test_a_commit_of_this_repository_is_found_in_a_checkout_and_any_hex_token_outside_one(tmp_path):
    lines = [("line 1", "measured at deadbee1 and at 1234abc, a made-up id")]
    # outside a git checkout: every hex-looking token with digits and letters
    assert [t for _, what, t in findings(lines, None)] == ["deadbee1", "1234abc"]
    # inside one: the tokens git knows as commits (a repository of one commit, made here)
    if not shutil.which("git"):
        pytest.skip("git is not installed: a checkout's commits cannot be asked")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f.txt").write_text("x\n", encoding="utf-8")
    subprocess.run(git + ["add", "f.txt"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "one"], check=True)
    head = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    blob = subprocess.run(git + ["rev-parse", "HEAD:f.txt"], capture_output=True, text=True, check=True).stdout.strip()
    short = next(head[:n] for n in range(9, 41) if re.search(r"\d", head[:n]) and re.search(r"[a-f]", head[:n]))
    lines = [("line 4", f"the last run ({short}) and its full hash {head}; a file, not a commit: {blob}; 1234abc")]
    found = findings(lines, lambda tokens: git_commits(tokens, tmp_path))
    assert [(w, what, t) for w, what, t in found] == [("line 4", "a commit hash", short),
                                                      ("line 4", "a commit hash", head)]
