"""The tests' own strength, tested: planted bugs must make the suite fail, naming the test.

Each mutant is one small edit of ``course_lib`` — the bugs of issue 10 that the tests once let
through, and a few of their kind — applied to a temporary COPY of the repository
(``course_lib/``, ``data/``, ``tests/``, ``pyproject.toml``). The relevant test files then run in
a fresh ``python -m pytest -x -q`` with the copy as working directory and first on
``PYTHONPATH``; each run must fail, and the failing test must be one of those expected to
catch that bug. The real files are never touched.

Marked ``slow`` (two mutants run at a time; about half a minute on two idle cores).
"""
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str                   # relative to the repository
    old: str                    # text that must occur in the file (every occurrence is replaced)
    new: str
    tests: tuple[str, ...]      # test files to run
    caught_by: tuple[str, ...]  # test function names, one of which must be the failing one
    select: str = ""            # optional -k expression: only the tests of the file that concern the bug


MUTANTS = [
    Mutant("case-insensitive contractions", "course_lib/tokens/bpe.py",
           """r\"\"\"'s|'t|'re|'ve|'m|'ll|'d|""", """r\"\"\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|""",
           ("tests/test_tokenizer_reference.py",),
           ("test_from_scratch_tokenizer_equals_hugging_face", "test_tiktoken_encoding_equals_hugging_face"),
           select="equals_hugging_face"),
    Mutant("no (?!\\S) look-ahead", "course_lib/tokens/bpe.py", r"""|\s+(?!\S)|\s+""", r"""|\s+""",
           ("tests/test_tokenizer_reference.py",),
           ("test_from_scratch_tokenizer_equals_hugging_face", "test_tiktoken_encoding_equals_hugging_face"),
           select="equals_hugging_face"),
    Mutant("streaming decoder holds ED A0", "course_lib/tokens/streaming.py",
           "0xED: (0x80, 0x9F)", "0xED: (0x80, 0xBF)", ("tests/test_tokenizer.py",),
           ("test_streaming_decoder_under_random_chunking", "test_streaming_decoder_on_random_invalid_utf8",
            "test_streaming_decoder_releases_a_replacement_as_soon_as_nothing_can_complete_it"),
           select="streaming"),
    Mutant("lone surrogates not replaced", "course_lib/tokens/bpe.py",
           "        text = replace_lone_surrogates(text)\n", "", ("tests/test_tokenizer.py",),
           ("test_lone_surrogates_are_replaced_as_tiktoken_replaces_them",), select="surrogates"),
    Mutant("layer_norm_epsilon ignored", "course_lib/model/gpt.py",
           "nn.LayerNorm(config.n_embd, eps=config.layer_norm_eps)", "nn.LayerNorm(config.n_embd)",
           ("tests/test_gpt2_reference.py",),
           ("test_config_json_is_read_with_epsilon_and_activation",
            "test_logits_equal_transformers_on_a_batch_filling_the_position_table"),
           select="epsilon or position_table"),
    Mutant("no causal mask when several ids are appended to the cache", "course_lib/model/gpt.py",
           'masked = scores.masked_fill(future, float("-inf"))',
           'masked = scores.masked_fill(future, float("-inf")) if past == 0 or T == 1 else scores',
           ("tests/test_gpt2_reference.py",),
           ("test_kv_cache_appends_of_several_ids_equal_transformers",
            "test_kv_cache_appends_up_to_the_last_position_row"),
           select="kv_cache_appends"),
    Mutant("batched rules rank float32 probabilities", "course_lib/decoding/pipeline.py",
           "    weights, total = _weights(rule, z)\n"
           "    return _filter(rule, weights, z, allowed, total)",
           "    weights, total = _weights(rule, z)\n"
           "    return filter_batched(rule, (weights if total is None else weights / total).float())",
           ("tests/test_decoding_reference.py",),
           ("test_minus_inf_is_never_kept", "test_underflow_cannot_pick_tokens",
            "test_batched_rules_keep_the_per_row_ids"),
           select="minus_inf or underflow or per_row_ids"),
    Mutant("batched top-p keeps one more id when a running sum equals p", "course_lib/decoding/select.py",
           "n = 1 + (sums[:, :-1] < p)", "n = 1 + (sums[:, :-1] <= p)",
           ("tests/test_decoding_batched.py",),
           ("test_top_p_decides_exactly_where_the_running_sum_meets_p",), select="exactly_where"),
    Mutant("batched top-p from a sample's bar keeps one more id when a running sum equals p",
           "course_lib/decoding/threshold.py", "n = 1 + (sums[:, :-1] < p)", "n = 1 + (sums[:, :-1] <= p)",
           ("tests/test_decoding_batched.py",),
           ("test_top_p_decides_exactly_where_the_running_sum_meets_p",), select="exactly_where"),
    Mutant("the pipeline on top-k candidates never redoes a row whose running sum is within rounding of p",
           "course_lib/decoding/candidates.py", "return (16 * k + 256) * 2.0 ** -53", "return 0.0",
           ("tests/test_decoding_methods.py",),
           ("test_a_running_sum_at_p_sends_its_row_to_the_per_row_arithmetic",), select="running_sum"),
    Mutant("top-k from a sample's bar keeps every id tied with the k-th (transformers' cut)",
           "course_lib/decoding/threshold.py", "keep = above | (tied & (tie_rank - before[rows] <= room[rows]))",
           "keep = above | tied",
           ("tests/test_decoding_methods.py",),
           ("test_every_top_k_method_keeps_the_same_ids",), select="top_k_method"),
    Mutant("a -inf logit can be kept", "course_lib/decoding/rules.py",
           "    return ranked_ids(z), allowed\n", "    return ranked_ids(z), None\n",
           ("tests/test_decoding_reference.py",),
           ("test_minus_inf_is_never_kept",), select="minus_inf"),
]


def make_copy(target: Path) -> Path:
    for folder in ("course_lib", "data", "tests"):
        shutil.copytree(ROOT / folder, target / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "artifacts", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", target / "pyproject.toml")
    return target


def run_mutant(mutant: Mutant, base: Path) -> tuple[Mutant, str | None, str]:
    """Apply ``mutant`` to a fresh copy, run its tests; return (mutant, failing test or None, output)."""
    copy = make_copy(base / re.sub(r"\W+", "_", mutant.name))
    source = copy / mutant.file
    text = source.read_text(encoding="utf-8")
    assert mutant.old in text, f"mutant {mutant.name!r}: its text is no longer in {mutant.file}; update it"
    source.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if k not in ("COURSE_FIGURE_LOG", "COURSE_DATA_DIR", "PYTEST_ADDOPTS")}
    # no third-party pytest plugins (nbval, playwright, xdist): they only cost start-up time here
    env.update(PYTHONPATH=str(copy), HF_HUB_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1",
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    select = ["-k", mutant.select] if mutant.select else []
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-m", "not slow", "-p", "no:cacheprovider", "-W", "ignore",
         *select, *mutant.tests],
        cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    failed = re.search(r"^FAILED \S+::(\w+)", output, flags=re.M)
    if result.returncode == 0:
        return mutant, None, output
    return mutant, failed.group(1) if failed else f"<no test failed; exit code {result.returncode}>", output


def test_the_copy_imports_its_own_course_lib(tmp_path):
    """The runs below must test the mutated copy, not the installed package."""
    copy = make_copy(tmp_path / "copy")
    env = dict(os.environ, PYTHONPATH=str(copy))
    out = subprocess.run([sys.executable, "-c", "import course_lib.tokens.bpe as t; print(t.__file__, t.tokenizer_dir())"],
                         cwd=copy, env={k: v for k, v in env.items() if k != "COURSE_DATA_DIR"},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    module_file, data_dir = out.stdout.split()
    assert Path(module_file).is_relative_to(copy) and Path(data_dir).is_relative_to(copy), out.stdout


@pytest.mark.slow
def test_every_planted_bug_makes_the_suite_fail(tmp_path):
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda m: run_mutant(m, tmp_path), MUTANTS))
    report = []
    for mutant, failing, output in results:
        if failing is None:
            report.append(f"SURVIVED  {mutant.name}: {' '.join(mutant.tests)} all pass with the bug planted")
        elif failing not in mutant.caught_by:
            report.append(f"WRONG     {mutant.name}: failed in {failing}, expected one of {mutant.caught_by}\n"
                          + output[-1500:])
        else:
            report.append(f"caught    {mutant.name}: by {failing}")
    print("\n".join(report))
    assert all(line.startswith("caught") for line in report), "\n".join(report)
