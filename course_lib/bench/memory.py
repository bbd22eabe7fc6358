"""Benchmark: memory of loading GPT-2 and generating, the course next to Hugging Face ``transformers``.

Not taught: a script beside notebooks 05 and 07 (where GPT-2 is loaded). Run (Linux: it reads
``/proc/self/status``):

    python -m course_lib.bench.memory                  # 256 greedy tokens after loading

A random-weight GPT-2 small is written once to a temporary ``model.safetensors`` in Hugging Face's
layout (``bench.gpt2_file``; pretrained weights may be absent). Each side then runs in a *fresh*
Python process, in turn (course, HF, course, HF), so that one side's freed memory cannot hide the
other's peak. A process measures its resident memory (RSS) after its imports, then:

* load + first forward: the peak RSS above that (``VmHWM``, reset after the imports) while loading
  the file and running one 5-token forward pass — the course with ``gpt2.load_gpt2`` (the file's
  tensors kept as views), transformers with ``GPT2LMHeadModel.from_pretrained``;
* generation: the peak RSS above the loaded model while generating ``--tokens`` greedy tokens
  with the KV cache (and what stays after), next to the size of the cache itself
  (2 × 12 layers × 768 × 4 bytes per position).

It prints the figures of the last of its ``--rounds`` and the ratio course / HF (< 1: the course
needs less); docs/benchmarks.md says what each row means.

Notebooks (Binder gives a session 2 GB, JupyterLab and every kernel included)::

    python -m course_lib.bench.memory --notebooks      # each notebook's kernel peak, both editions
    python -m course_lib.bench.memory --lab            # JupyterLab + 02, 05, 07 running at once

``--notebooks`` runs every notebook of both editions (or the paths given), each in a fresh kernel
as .ci/execute_notebooks.py does (GPT-2's weights hidden, as on a fresh Binder) and prints the
kernel's peak resident memory (``VmHWM``), read by a cell appended to the run; each must stay
within ``--limit`` MB (500). ``--lab`` starts ``jupyter lab`` (no browser), opens its page, runs
three notebooks at once, each in its own kernel, and samples the memory of the server and the
three kernels together: the peak of the summed RSS (shared library pages counted in each
process: an upper bound) and of the summed PSS (shared pages split among them), against
``--session-limit`` MB (2000).
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from . import NO_TRANSFORMERS, machine_line

PROMPT_IDS = [464, 3616, 286, 1204, 318]     # "The meaning of life is"
MiB = 2 ** 20
MB = 10 ** 6                                 # Binder's limits are in MB (450M guaranteed, 2G at most)
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
LAB_NOTEBOOKS = ["02_embeddings.ipynb", "05_lm_head.ipynb", "07_sampling.ipynb"]   # GPT-2-sized parts, the longest
PEAK_MARK = "course-bench-peak"
PEAK_CELL = f"""print("{PEAK_MARK}", [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")][0])"""


def status(field: str) -> float:
    """``VmRSS`` / ``VmHWM`` of this process, in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024 / MiB
    raise OSError(f"/proc/self/status has no {field}")


def reset_peak() -> None:
    """Set VmHWM (the peak) back to the current RSS (Linux ≥ 4.0)."""
    Path("/proc/self/clear_refs").write_text("5")


def measure(side: str, folder: str, tokens: int) -> dict:
    """Run in a fresh process: one side's memory figures, in MiB."""
    import torch
    torch.set_num_threads(1)
    if side == "course":
        from ..decoding.generate import generate
        from ..gpt2.loader import load_gpt2
    else:
        import transformers
        transformers.logging.set_verbosity_error()
    ids = torch.tensor([PROMPT_IDS])
    base = status("VmRSS")
    reset_peak()
    with torch.inference_mode():
        if side == "course":
            model = load_gpt2(folder)
        else:
            model = transformers.GPT2LMHeadModel.from_pretrained(folder).eval()
        model(ids)
    load_peak = status("VmHWM") - base
    before = status("VmRSS")
    reset_peak()
    with torch.inference_mode():
        if side == "course":
            new = generate(model, PROMPT_IDS, tokens).new_ids
        else:
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=tokens,
                                 min_new_tokens=tokens, do_sample=False, pad_token_id=model.config.eos_token_id)
            new = out[0, len(PROMPT_IDS):].tolist()
    return {"imports": base, "load_peak": load_peak, "loaded": before - base,
            "growth": status("VmRSS") - before, "gen_peak": status("VmHWM") - before, "ids": new}


def run_side(side: str, folder: str, tokens: int) -> dict | None:
    result = subprocess.run([sys.executable, "-m", "course_lib.bench.memory", "--side", side,
                             "--folder", folder, "--tokens", str(tokens)], capture_output=True, text=True)
    if result.returncode:
        print(f"{side}: the measuring process failed:\n{result.stderr[-2000:]}")
        return None
    return json.loads(result.stdout.strip().splitlines()[-1])


def every_notebook() -> list[Path]:
    """The notebooks of both editions (not the solutions), English first."""
    return sorted(NOTEBOOKS.glob("*.ipynb")) + sorted((NOTEBOOKS / "zh").glob("*.ipynb"))


def notebook_peak(path: Path) -> float:
    """Run ``path`` top to bottom in a fresh kernel (GPT-2's weights hidden, as
    .ci/execute_notebooks.py does); the kernel's peak resident memory, in MB."""
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PEAK_CELL))
    with tempfile.TemporaryDirectory() as hub:
        env = {name: value for name, value in os.environ.items() if name != "COURSE_GPT2_WEIGHTS"}
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(path.resolve().parent)}}).execute(
            env=dict(env, HF_HUB_CACHE=hub))                  # the kernel's environment; ours unchanged
    out = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.get("output_type") == "stream")
    return int(out.split(PEAK_MARK)[1].split()[0]) * 1024 / MB       # VmHWM is in kB (KiB)


def run_notebooks(paths: list[Path], limit: float) -> bool:
    """Print each notebook's kernel peak; True when all are within ``limit`` MB."""
    print(f"kernel peak resident memory (VmHWM) per notebook, each in a fresh kernel, GPT-2's weights "
          f"absent; limit {limit:.0f} MB; {machine_line()}", flush=True)
    within = True
    for path in paths:
        peak = notebook_peak(path)
        within &= peak <= limit
        name = path.resolve().relative_to(NOTEBOOKS.parent) if path.resolve().is_relative_to(NOTEBOOKS.parent) else path
        print(f"{str(name):<36}{peak:>8.0f} MB  {'ok' if peak <= limit else 'ABOVE THE LIMIT'}", flush=True)
    print(f"{len(paths)} notebooks: {'every kernel within' if within else 'NOT ALL within'} {limit:.0f} MB")
    return within


def process_tree(root: int) -> list[int]:
    """``root`` and every process below it (from /proc/*/stat)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:                               # the process ended meanwhile
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo += children.get(pid, [])
    return tree


def rss_and_pss(pid: int) -> tuple[int, int]:
    """A process's resident and proportional set sizes, in bytes (0, 0 once it has ended)."""
    values = {"Rss:": 0, "Pss:": 0}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            key = line.split(maxsplit=1)[0] if line.strip() else ""
            if key in values:
                values[key] = int(line.split()[1]) * 1024
    except OSError:
        pass
    return values["Rss:"], values["Pss:"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_lab(paths: list[Path], limit: float) -> bool:
    """JupyterLab's server and one kernel per notebook in ``paths``, all at once: the peak of
    their summed RSS and PSS while the notebooks run; True when the summed RSS (the larger)
    stays within ``limit`` MB."""
    port, token = free_port(), secrets.token_hex(16)
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, JUPYTER_RUNTIME_DIR=home)
        log = Path(home) / "lab.log"
        with log.open("w") as err:
            lab = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}",
                                    f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={NOTEBOOKS.parent}"]
                                   + (["--allow-root"] if os.geteuid() == 0 else []),       # root: a container
                                   env=env, stdout=subprocess.DEVNULL, stderr=err)
        try:
            for _ in range(120):                         # the server answers within a minute
                try:
                    urllib.request.urlopen(f"{url}/lab?token={token}", timeout=5).read()   # its page, rendered
                    break
                except OSError:
                    time.sleep(0.5)
            else:
                print("jupyter lab did not answer within a minute; the end of its log:\n"
                      + "\n".join(log.read_text(errors="replace").splitlines()[-10:]))
                return False
            logs = [Path(home) / f"run-{i}.log" for i in range(len(paths))]
            runners = [subprocess.Popen([sys.executable, "-m", "course_lib.bench.memory", "--limit", "1e9",
                                         "--notebooks", str(p)], stdout=subprocess.DEVNULL, stderr=log.open("w"))
                       for p, log in zip(paths, logs)]
            peaks = {"rss": 0, "pss": 0}
            while any(r.poll() is None for r in runners):
                pids = process_tree(lab.pid) + [pid for r in runners for pid in process_tree(r.pid)[1:]]
                sizes = [rss_and_pss(pid) for pid in pids]     # the runners themselves aside: the server is the client
                peaks["rss"] = max(peaks["rss"], sum(r for r, _ in sizes))
                peaks["pss"] = max(peaks["pss"], sum(p for _, p in sizes))
                time.sleep(0.2)
            server = sum(rss_and_pss(pid)[0] for pid in process_tree(lab.pid))
            failed = [f"{p.name}: {log.read_text(errors='replace').strip().splitlines()[-1:]}"
                      for p, r, log in zip(paths, runners, logs) if r.returncode]
        finally:
            lab.terminate()
            lab.wait(timeout=30)
    names = ", ".join(p.name for p in paths)
    print(f"JupyterLab's server ({server / MB:.0f} MB resident at the end) and {len(paths)} kernels running "
          f"{names} at once; {machine_line()}")
    print(f"peak of the summed RSS: {peaks['rss'] / MB:.0f} MB; of the summed PSS: {peaks['pss'] / MB:.0f} MB "
          f"(limit {limit:.0f} MB)")
    within = not failed and peaks["rss"] <= limit * MB
    print(("within the limit" if within else "ABOVE THE LIMIT") + (f"; failed to run: {failed}" if failed else ""))
    return within


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebooks", nargs="*", type=Path, metavar="NOTEBOOK",
                        help="each notebook's kernel peak (default: every notebook of both editions)")
    parser.add_argument("--limit", type=float, default=500, help="MB per kernel (default 500)")
    parser.add_argument("--lab", nargs="*", type=Path, metavar="NOTEBOOK",
                        help="JupyterLab + these notebooks at once (default: 02, 05, 07)")
    parser.add_argument("--session-limit", type=float, default=2000, help="MB for --lab (default 2000)")
    parser.add_argument("--tokens", type=int, default=256, help="greedy tokens generated (default 256)")
    parser.add_argument("--rounds", type=int, default=2, help="fresh processes per side (default 2)")
    parser.add_argument("--side", choices=["course", "hf"], help=argparse.SUPPRESS)   # a child process
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.notebooks is not None:
        sys.exit(0 if run_notebooks(args.notebooks or every_notebook(), args.limit) else 1)
    if args.lab is not None:
        sys.exit(0 if run_lab(args.lab or [NOTEBOOKS / name for name in LAB_NOTEBOOKS], args.session_limit) else 1)
    if args.side:
        print(json.dumps(measure(args.side, args.folder, args.tokens)))
        return
    if not Path("/proc/self/clear_refs").exists():
        print("this benchmark reads Linux's /proc/self/status: not available here")
        return
    try:
        import transformers  # noqa: F401
        sides = ["course", "hf"]
    except ImportError:
        print(NO_TRANSFORMERS)
        sides = ["course"]
    from ..gpt2.config import GPT2_SMALL_CONFIG as c
    from .gpt2_file import save_random_gpt2
    kv = 2 * c.n_layer * c.n_embd * 4 * (len(PROMPT_IDS) + args.tokens) / MiB
    with tempfile.TemporaryDirectory() as folder:
        file = save_random_gpt2(folder)
        print(f"GPT-2 small, random weights, {file.stat().st_size / MiB:.0f} MiB file; each side in a fresh "
              f"process, {args.rounds} round(s) in turn; MiB above the RSS after imports; {machine_line()}")
        results = {}
        for _ in range(args.rounds):
            for side in sides:
                results[side] = run_side(side, folder, args.tokens) or results.get(side)
    course, hf = results.get("course"), results.get("hf")
    if course is None:
        return
    rows = [("load + first forward, peak", "load_peak"), ("after loading (resident)", "loaded"),
            (f"growth while generating {args.tokens} tokens", "growth"),
            (f"peak above the loaded model while generating", "gen_peak")]
    print(f"{'':<46}{'course':>10}{'HF':>10}{'course/HF':>11}")
    for label, key in rows:
        line = f"{label:<46}{course[key]:>10.0f}"
        if hf is not None:
            line += f"{hf[key]:>10.0f}" + (f"{course[key] / hf[key]:>10.2f}×" if hf[key] > 1 else "")
        print(line)
    print(f"{'the KV cache itself (2 × 12 × 768 × 4 B × ' + str(len(PROMPT_IDS) + args.tokens) + ')':<46}{kv:>10.1f}")
    verdict = "within" if course["gen_peak"] <= kv + 2 else "ABOVE"
    print(f"course: memory rose at most {course['gen_peak']:.0f} MiB while generating, {verdict} the KV cache "
          f"({kv:.1f} MiB, +2 MiB for one step's activations); {course['growth']:.0f} MiB kept after")
    if hf is not None:
        print(f"same ids: {'yes' if course['ids'] == hf['ids'] else 'NO'} ({len(course['ids'])} new tokens)")


if __name__ == "__main__":
    main()
