"""Benchmark: the course's ``generate`` side by side with Hugging Face ``transformers``' ``generate``.

Not taught: a script beside notebook 07 (sampling). Run:

    python -m course_lib.bench.generate                      # 64 greedy tokens, 1 and 2 threads
    python -m course_lib.bench.generate --tokens 32 --threads 1 --rounds 5
    python -m course_lib.bench.generate --markdown           # the same, then its table in Markdown
    python -m course_lib.bench.generate --repeat 3           # three runs (fresh processes): the figures
                                                             # they reproduce within 20 %, in Markdown

GPT-2 small's architecture with random (seeded) weights is written once to a temporary
``model.safetensors`` in Hugging Face's layout (``bench.gpt2_file``); the course loads it with
``gpt2.load_gpt2`` and transformers with ``GPT2LMHeadModel.from_pretrained``, so both run the same
numbers. Each case generates the same greedy tokens from the same 5-token prompt, with the KV
cache and without it (every step reruns the whole sequence), the two libraries called in turn
(course, HF, course, HF, …) so that noise from other work hits both. It prints, per token, the
median and minimum over the rounds and the ratio course / HF of the medians (< 1: the course is
faster), and whether both produced the same ids. Without ``transformers`` the HF columns are
skipped with a line saying so. Timings depend on the machine: this is a script, not a test.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile

import torch


from ..decoding.generate import generate
from ..gpt2.loader import load_gpt2
from . import NO_TRANSFORMERS, interleaved, machine_line, report
from .gpt2_file import save_random_gpt2

try:                                             # the comparison is optional
    import transformers
except ImportError:                              # pragma: no cover - depends on the environment
    transformers = None

PROMPT_IDS = [464, 3616, 286, 1204, 318]     # "The meaning of life is"


def hf_model(folder):
    """transformers' GPT-2 from the same file, or None without transformers."""
    if transformers is None:
        return None
    transformers.logging.set_verbosity_error()
    return transformers.GPT2LMHeadModel.from_pretrained(folder).eval()


def course_ids(model, tokens: int, use_cache: bool) -> list[int]:
    return generate(model, PROMPT_IDS, tokens, use_cache=use_cache).ids


def hf_ids(model, tokens: int, use_cache: bool) -> list[int]:
    with torch.inference_mode():
        out = model.generate(torch.tensor([PROMPT_IDS]), attention_mask=torch.ones(1, len(PROMPT_IDS), dtype=torch.long),
                             max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False,
                             use_cache=use_cache, pad_token_id=model.config.eos_token_id)
    return out[0].tolist()


def run(ours, theirs, tokens: int, threads: int, rounds: int) -> list[tuple[str, float, float | None]]:
    torch.set_num_threads(threads)
    print(f"\n{threads} thread(s), {tokens} new tokens, {rounds} interleaved rounds, ms per token")
    print(f"{'':<28}{'course med / min':>20}{'HF med / min':>20}{'course/HF':>11}")
    results = []
    for use_cache in (True, False):
        name = "greedy, KV cache" if use_cache else "greedy, no cache (rerun all)"
        fns = [lambda: course_ids(ours, tokens, use_cache)]
        if theirs is not None:
            fns.append(lambda: hf_ids(theirs, tokens, use_cache))
        first = [fn() for fn in fns]                               # warm-up, and the ids compared
        times = interleaved(fns, rounds, warm_up=False)
        cm, cmin = statistics.median(times[0]) / tokens * 1e3, min(times[0]) / tokens * 1e3
        if theirs is not None:
            hm, hmin = statistics.median(times[1]) / tokens * 1e3, min(times[1]) / tokens * 1e3
            print(f"{name:<28}{cm:>9.2f} /{cmin:>7.2f} ms{hm:>9.2f} /{hmin:>7.2f} ms{cm / hm:>10.2f}×")
            same = first[0] == first[1]
            print(f"{'':<4}same ids: {'yes' if same else 'NO'} ({len(first[0]) - len(PROMPT_IDS)} new "
                  f"tokens{'' if same else '; course ' + str(first[0][5:]) + ' HF ' + str(first[1][5:])})")
        else:
            hm = None
            print(f"{name:<28}{cm:>9.2f} /{cmin:>7.2f} ms")
        results.append((name, cm, hm))
    return results


TITLE = "GPT-2 small greedy generation: the course vs transformers (python -m course_lib.bench.generate)"


def figures_of(threads: int, tokens: int, results: list[tuple]) -> list[report.Figure]:
    """The published figures of one table: ms per token of each side and course / HF (goal ≤ 1×)."""
    table = f"{tokens} new tokens, {threads} thread{'s' if threads > 1 else ''}"
    out = []
    for name, cm, hm in results:
        out.append(report.Figure(table, name, "course, ms per token", cm, "ms"))
        if hm is not None:
            out += [report.Figure(table, name, "HF, ms per token", hm, "ms"),
                    report.Figure(table, name, "course / HF", cm / hm, "×", 1.0)]
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=64, help="new tokens per run (default 64)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch threads (default 1 2)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    report.add_options(parser)
    args = parser.parse_args(argv)
    report.publish("course_lib.bench.generate", TITLE, argv, args, measure)


def measure(args) -> list[report.Figure]:
    print(f"torch {torch.__version__}, GPT-2 small architecture, random weights (seed {args.seed}) "
          f"from a temporary model.safetensors, prompt {len(PROMPT_IDS)} tokens; {machine_line()}")
    if transformers is None:
        print(NO_TRANSFORMERS)
    else:
        print(f"transformers {transformers.__version__}")
    figures = []
    with tempfile.TemporaryDirectory() as folder:
        save_random_gpt2(folder, seed=args.seed)
        ours, theirs = load_gpt2(folder), hf_model(folder)
        for threads in args.threads:
            figures += figures_of(threads, args.tokens, run(ours, theirs, args.tokens, threads, args.rounds))
    return figures


if __name__ == "__main__":
    main()
