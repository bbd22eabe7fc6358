"""Benchmark: grade a synthetic class of submissions with the class grader and check every row.

Not taught. Builds N copies of the worked solutions (every notebook in notebooks/solutions/,
their code cells in one notebook, graded on the chapters it holds), each with one change: none (an honest learner), one typical mistake, a stub left, a loop that never ends,
``os._exit``, ``sys.exit`` in a cell, a syntax error, megabytes of output, a cell that replaces
torch's softmax and the course's checkers, a list whose ``==`` is always True, a call of the
course's own answer, a file that is not JSON, a memory hog. Grades them with
``python -m course_lib.grading`` (``--jobs``), then checks that each changed exercise got the
expected outcome and that every other exercise of every submission passed (so no submission
changed another's grade), and prints submissions per minute beside the isolation the grader
achieved (its ``isolation:`` line)::

    python -m course_lib.bench.grading --n 300 --jobs 2
"""
from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOLUTIONS = Path(__file__).resolve().parents[2] / "notebooks" / "solutions"

# kind -> (exercise changed, (text in its solution, replacement), expected reason (None: passes))
MISTAKES = {
    "mask diagonal": ("make_causal_mask", ("diagonal=1", "diagonal=0"), "the diagonal is masked"),
    "scores / d": ("attention_head", ("/ math.sqrt(d)", "/ d"), "not by d"),
    "plain view": ("split_heads", ("x.view(B, T, n_head, D // n_head).transpose(1, 2)", "x.view(B, n_head, T, D // n_head)"), "plain reshape"),
    "eps outside": ("layer_norm", ("torch.sqrt(var + eps)", "(torch.sqrt(var) + eps)"), "eps goes inside"),
    "no ReLU": ("mlp_forward", ("torch.relu(x @ W_up.T + b_up)", "(x @ W_up.T + b_up)"), "apply ReLU"),
    "tied twice": ("head_parameters", ("V * D if tied else 2 * V * D", "2 * V * D"), "count it once"),
    "no max shift": ("stable_softmax", ("z - z.max(dim=-1, keepdim=True).values", "z"), "overflows"),
    "top-p <=": ("top_p_filter", ("before < p", "before <= p"), "a sum equal to p"),
    "min-p >": ("min_p_filter", ("probs >= bar", "probs > bar"), "exactly at the bar"),
    "right-closed": ("interval_draw", ("if u < end:", "if u <= end:"), "left-closed"),
    "no cache": ("generate_cached", ("model(torch.tensor([[next_id]]), cache=cache)", "model(torch.tensor([[next_id]]))"), "WITH the cache"),
    "loss sum": ("cross_entropy", ("].mean()", "].sum()"), "average over"),
    "P from 1": ("embed", ("P[:T]", "P[1:T + 1]"), "the first token adds P[0]"),
}
HOSTILE_CELL = """import torch, course_lib.exercises as ex, course_lib.figures.registry as reg
from course_lib.exercises.core import Result
torch.softmax = lambda *a, **k: torch.zeros(1)
for _name in list(ex.EXERCISES):
    ex.EXERCISES[_name] = (ex.EXERCISES[_name][0], lambda fn, n=_name: Result(n, True, "✓"))
reg.figure_problem = lambda *a, **k: None"""
# kind -> (exercise, how its solution cell changes (a function of the cell), expected reason)
BROKEN = {
    "stub": ("split_heads", lambda cell: cell.split("\n")[0] + "\n    raise NotImplementedError", "not attempted"),
    "hang": ("one_logit", lambda cell: cell.replace("    total = 0.0", "    while True:\n        pass"), "did not return within"),
    "crash": ("all_logits", lambda cell: cell.replace("    return H", "    import os\n    os._exit(1)\n    return H"), "process ended"),
    "syntax": ("embed", lambda cell: cell.replace("def embed(ids, E, P):", "def embed(ids, E, P)"), "SyntaxError"),
    "spam": ("embed", lambda cell: cell.replace("    T = ids.shape[-1]", "    print('x' * 2_000_000)\n    T = ids.shape[-1]"), None),
    "rigged": ("bpe_merge", lambda cell: "class Always(list):\n    def __eq__(self, other):\n        return True\n\n"
               "def bpe_merge(word, ranks):\n    return Always(list(word))", "LOWEST rank"),
    "reference": ("top_k_filter", lambda cell: "from course_lib import decoding as D\n\ndef top_k_filter(probs, k):\n"
                  "    rows = probs.reshape(-1, probs.shape[-1])\n    return D.renormalize_batched(rows, D.top_k_mask(rows, k)).reshape(probs.shape)",
                  "write it from scratch"),
    "memory": ("layer_norm", lambda cell: cell.replace("    mean = x.mean", "    hog = torch.ones(10**11)\n    mean = x.mean"), "raised"),
}
WHOLE = {"exit": ("sys.exit in a cell", "import sys\nsys.exit(1)"), "patcher": ("replaces torch and the checkers", HOSTILE_CELL)}
KINDS = ["honest"] * 6 + list(MISTAKES) + list(BROKEN) + list(WHOLE) + ["invalid JSON"]


def solutions_notebook() -> dict:
    """Every worked solution in one notebook: the code cells of notebooks/solutions/*.ipynb, in order."""
    paths = sorted(SOLUTIONS.glob("*.ipynb"))
    if not paths:
        raise FileNotFoundError(f"no solutions notebook in {SOLUTIONS}")
    notebooks = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    cells = [c for nb in notebooks for c in nb["cells"] if c["cell_type"] == "code"]
    return {"cells": cells, "metadata": {"kernelspec": notebooks[0]["metadata"].get("kernelspec", {})},
            "nbformat": 4, "nbformat_minor": 5}


def build(folder: Path, n: int) -> dict[str, tuple[str, str | None, str | None]]:
    """n submissions in ``folder``; returns path -> (kind, exercise changed, expected reason)."""
    notebook = solutions_notebook()
    expected = {}
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        nb = json.loads(json.dumps(notebook))
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        exercise, reason = None, None
        if kind in MISTAKES or kind in BROKEN:
            exercise = (MISTAKES.get(kind) or BROKEN[kind])[0]
            cell = next(c for c in code if "".join(c["source"]).startswith(f"def {exercise}("))
            source = "".join(cell["source"])
            if kind in MISTAKES:
                old, new = MISTAKES[kind][1]
                assert old in source, (kind, old)
                source, reason = source.replace(old, new), MISTAKES[kind][2]
            else:
                source, reason = BROKEN[kind][1](source), BROKEN[kind][2]
            cell["source"] = source
        elif kind in WHOLE:
            code[0]["source"] = "".join(code[0]["source"]) + "\n" + WHOLE[kind][1]
        path = folder / f"learner{i:03d}" / "solutions.ipynb"
        path.parent.mkdir(parents=True)
        text = json.dumps(nb, ensure_ascii=False)
        path.write_text(text[: len(text) // 2] if kind == "invalid JSON" else text, encoding="utf-8")
        expected[str(path)] = (kind, exercise, reason)
    return expected


def verify(rows: list[dict], expected: dict) -> list[str]:
    """Every disagreement between the gradebook and what each submission should have got."""
    problems = []
    for row in rows:
        kind, exercise, reason = expected[row["submission"]]
        passed = row["passed"] == "True"
        if kind == "invalid JSON":
            ok = not passed and "is not valid JSON" in row["reason"]
        elif kind == "patcher":            # its own torch.softmax is broken: its functions that call it fail
            ok = passed or row["exercise"] in ("attention_head", "target_probs", "pre_norm_block", "sgd_step", "generate_cached")
        elif row["exercise"] == exercise and reason is not None:
            ok = not passed and reason in row["reason"]
        elif kind == "mask diagonal" and row["exercise"] == "attention_head":
            ok = not passed                 # the worked attention_head calls the learner's own (wrong) mask
        else:
            ok = passed
        if not ok:
            problems.append(f"{kind}: {row['exercise']} passed={row['passed']} reason={row['reason']!r}")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=10.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="class-") as tmp:
        folder = Path(tmp)
        expected = build(folder / "subs", args.n)
        out = folder / "grades.csv"
        started = time.monotonic()
        run = subprocess.run([sys.executable, "-m", "course_lib.grading", str(folder / "subs"), "--out", str(out),
                              "--jobs", str(args.jobs), "--timeout", str(args.timeout)], capture_output=True, text=True)
        if run.returncode:
            print(run.stdout, run.stderr[-3000:], sep="\n")
            return 1
        elapsed = time.monotonic() - started
        rows = list(csv.DictReader(out.open(encoding="utf-8")))
    print(run.stdout.strip())
    problems = verify(rows, expected)
    isolation = next((line.split(":", 1)[1].strip() for line in run.stdout.splitlines() if line.startswith("isolation:")), "?")
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"{args.n} submissions × 26 exercises = {len(rows)} rows in {elapsed:.0f} s with --jobs {args.jobs} "
          f"on {cpu}: {args.n / elapsed * 60:.1f} submissions per minute; "
          f"{len(problems)} rows differ from what each submission should get; isolation: {isolation}")
    for problem in problems[:20]:
        print("  ", problem)
    return 1 if problems or run.returncode else 0


if __name__ == "__main__":
    sys.exit(main())
