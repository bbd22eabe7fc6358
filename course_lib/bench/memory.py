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
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from . import NO_TRANSFORMERS, machine_line

PROMPT_IDS = [464, 3616, 286, 1204, 318]     # "The meaning of life is"
MiB = 2 ** 20


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=256, help="greedy tokens generated (default 256)")
    parser.add_argument("--rounds", type=int, default=2, help="fresh processes per side (default 2)")
    parser.add_argument("--side", choices=["course", "hf"], help=argparse.SUPPRESS)   # a child process
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
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
