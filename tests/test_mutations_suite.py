"""The tests' own strength, tested: planted bugs must make the suite fail, naming the test.

Each mutant is one small edit of ``course_lib``, a bug of a kind the tests must catch, applied
to a temporary COPY of the repository (``course_lib/``, ``data/``, ``tests/``,
``pyproject.toml``). The relevant test files then run as ``python -m pytest -x -q``
in a new process with the copy as working directory and first on ``sys.path``; each run must
fail, and the failing test must be one of those expected to catch that bug. The real files are
never touched. One test per mutant, so that pytest-xdist shares them between its workers.
Marked ``planted`` (make test-all).
"""
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from test_mutations import writable_copy

pytestmark = pytest.mark.planted

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
           "    q = (weights if total is None else weights / total).float().double()\n"
           "    return _filter(rule, q, q, None)",
           ("tests/test_decoding_reference.py",),
           ("test_minus_inf_is_never_kept", "test_underflow_cannot_pick_tokens",
            "test_batched_rules_keep_the_per_row_ids"),
           select="minus_inf or underflow or per_row_ids"),
    Mutant("batched top-p keeps one more id when a running sum equals p", "course_lib/decoding/batched.py",
           "n = 1 + (sums[:, :-1] < p)", "n = 1 + (sums[:, :-1] <= p)",
           ("tests/test_decoding_batched.py",),
           ("test_top_p_decides_exactly_where_the_running_sum_meets_p",), select="exactly_where"),
    Mutant("batched top-p never sorts a nucleus wider than its first 4,096 values whole",
           "course_lib/decoding/batched.py", "return n, kth, tied, whole | (n < top.shape[1])",
           "return n, kth, tied, True | (n < top.shape[1])",
           ("tests/test_decoding_hard_rows.py",),
           ("test_a_nucleus_wider_than_the_first_partition_is_sorted_whole",), select="nucleus_wider"),
    Mutant("batched top-k keeps every id tied with the k-th (transformers' cut)", "course_lib/decoding/batched.py",
           "tied = torch.from_numpy(np.flatnonzero(kth == part[:, 0]))",
           "tied = torch.from_numpy(np.flatnonzero(kth != kth))",
           ("tests/test_decoding_hard_rows.py",),
           ("test_top_k_keeps_the_per_row_ids", "test_the_tie_path_keeps_the_smallest_tied_ids"),
           select="top_k_keeps or tie_path"),
    Mutant("the tie path keeps the largest tied ids", "course_lib/decoding/batched.py",
           "return above | (at & (torch.cumsum(at, dim=-1) <= room))",
           "return above | (at & (torch.cumsum(at.flip(-1), dim=-1).flip(-1) <= room))",
           ("tests/test_decoding_hard_rows.py",),
           ("test_top_k_keeps_the_per_row_ids", "test_the_tie_path_keeps_the_smallest_tied_ids"),
           select="top_k_keeps or tie_path"),
    Mutant("batched min-p rounds its float64 bar to the nearest float32", "course_lib/decoding/rules.py",
           "        low = np.where(low < bar, np.nextafter(low, a.dtype.type(np.inf)), low)\n", "",
           ("tests/test_decoding_hard_rows.py",),
           ("test_min_p_compares_in_float64_as_the_per_row_rule",), select="min_p_compares"),
    Mutant("a -inf logit can be kept", "course_lib/decoding/rules.py",
           "    return ranked_ids(z), allowed\n", "    return ranked_ids(z), None\n",
           ("tests/test_decoding_reference.py",),
           ("test_minus_inf_is_never_kept",), select="minus_inf"),
    Mutant("the batched pipeline skips the division by the whole row's sum", "course_lib/decoding/pipeline.py",
           "    if total is not None:\n        current = current / total\n", "",
           ("tests/test_decoding_hard_rows.py",),
           ("test_the_pipeline_is_the_float64_softmax_then_the_filters_bit_for_bit",), select="bit_for_bit"),
]


def make_copy(target: Path) -> Path:
    """A writable copy of the parts of the repository the runs read (also from a read-only
    checkout: ``test_mutations.writable_copy``)."""
    for folder in ("course_lib", "data", "tests"):
        writable_copy(ROOT / folder, target / folder, ignore=shutil.ignore_patterns("__pycache__", "artifacts", "*.pyc"))
    shutil.copyfile(ROOT / "pyproject.toml", target / "pyproject.toml")
    return target


def mutant_env() -> dict:
    """The environment of a mutant's run: the suite's own settings left out (no figure log, no
    data folder, no pytest options) and no third-party pytest plugins (nbval, playwright,
    xdist: the mutants' tests use none of them)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("COURSE_FIGURE_LOG", "COURSE_DATA_DIR", "PYTEST_ADDOPTS", "PYTHONPATH")}
    env.update(HF_HUB_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    return env


def run_pytest(copy: Path, args: list[str], timeout: float = 600) -> tuple[int, str]:
    """(exit code, output) of ``python -m pytest args`` run in ``copy``, which comes first on
    ``sys.path``; a run that hangs fails the test after ``timeout`` s."""
    env = mutant_env() | {"PYTHONPATH": str(copy)}
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=copy, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the pytest run in {copy} did not end within {timeout} s") from None
    return done.returncode, done.stdout + done.stderr


def test_the_copy_imports_its_own_course_lib(tmp_path):
    """The runs below must test the mutated copy, not the installed package: a test run in a
    copy imports course_lib (and finds data/) there."""
    copy = make_copy(tmp_path / "copy")
    probe = copy / "tests" / "test_zz_which_course_lib.py"
    probe.write_text(
        "def test_which():\n"
        "    import course_lib.tokens.bpe as t\n"
        "    print('\\nIMPORTED', t.__file__, t.tokenizer_dir())\n", encoding="utf-8")
    code, output = run_pytest(copy, ["-q", "-s", "-p", "no:cacheprovider", str(probe.relative_to(copy))])
    assert code == 0, output
    module_file, data_dir = re.search(r"^IMPORTED (\S+) (\S+)$", output, re.M).groups()
    assert Path(module_file).is_relative_to(copy) and Path(data_dir).is_relative_to(copy), output


@pytest.mark.parametrize("mutant", MUTANTS, ids=[re.sub(r"\W+", "-", m.name) for m in MUTANTS])
def test_every_planted_bug_makes_the_suite_fail(tmp_path, mutant):
    copy = make_copy(tmp_path / "copy")
    source = copy / mutant.file
    text = source.read_text(encoding="utf-8")
    assert mutant.old in text, f"mutant {mutant.name!r}: its text is no longer in {mutant.file}; update it"
    source.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")
    select = ["-k", mutant.select] if mutant.select else []
    code, output = run_pytest(copy, ["-x", "-q", "-m", "not slow", "-p", "no:cacheprovider", "-W", "ignore",
                                     *select, *mutant.tests])
    failed = re.search(r"^FAILED \S+::(\w+)", output, flags=re.M)
    failing = None if code == 0 else failed.group(1) if failed else f"<no test failed; exit code {code}>"
    print(f"{mutant.name}: failed in {failing}")
    assert failing is not None, f"SURVIVED  {mutant.name}: {' '.join(mutant.tests)} all pass with the bug planted"
    assert failing in mutant.caught_by, (f"WRONG     {mutant.name}: failed in {failing}, expected one of "
                                         f"{mutant.caught_by}\n" + output[-1500:])
