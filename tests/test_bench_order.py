"""The benchmarks' interleaving (``course_lib.bench.interleaved``): every side is timed in every
round, and the order turns each round, so that no side always runs right after the same
neighbour (a call right after a heavy one runs slower: in a fixed order the floor paid that)."""
from collections import Counter

import pytest

from course_lib.bench import interleaved, per_round


def test_each_side_follows_each_other_side_equally_often():
    calls = []
    fns = [lambda name=name: calls.append(name) for name in "abc"]
    times = interleaved(fns, rounds=6, warm_up=False)
    assert [len(t) for t in times] == [6, 6, 6]
    assert all(s >= 0 for t in times for s in t)
    rounds = [calls[i:i + 3] for i in range(0, len(calls), 3)]
    assert rounds[:3] == [list("abc"), list("bca"), list("cab")]
    assert all(sorted(r) == list("abc") for r in rounds)          # each side once per round
    after = Counter(zip(calls, calls[1:]))                          # who ran right before whom
    for x in "abc":
        assert sum(n for (first, second), n in after.items() if second == x and first != x) >= 5
        assert {first for (first, second) in after if second == x} == set("abc") - {x}


def test_round_by_round_ratios_pair_each_round_with_itself():
    """The ratio of two sides is taken within each round (course and floor timed under the same
    conditions), not between their medians: a slowed round slows both of its sides."""
    course = [2.0, 20.0, 4.0, 4.4, 2.2]           # rounds 2 and 4: the machine was busy
    floor = [1.0, 10.0, 1.0, 1.1, 1.1]            # median 1.1 (course's median 4.0: 3.6× the floor)
    assert per_round(course, floor, 3.0) == "median 2.00×, 3 of 5 rounds ≤ 3×"
    assert per_round(course[:4], floor[:4]) == "median 3.00×"                # the middle two, halved
    with pytest.raises(ValueError, match="one time of each side per round"):
        per_round(course, floor[:3])


def test_each_timed_call_of_one_row_takes_the_next_row():
    """The [1, V] rows of the sampling bench: each timed call takes the next of several different
    rows (in generation every step brings a new row; one row called again and again lets the
    CPU's branch predictor learn it), and the
    kept-set comparison reads the first row every time."""
    import torch

    from course_lib.bench.sampling import cases
    from course_lib.decoding import softmax_with_temperature_batched

    pool = torch.randn(3, 40, generator=torch.Generator().manual_seed(0))
    batches = [pool[b:b + 1] for b in range(3)]
    name, course, hf, course_kept, hf_kept = cases(batches)[0]
    assert name.startswith("temperature")
    want = [softmax_with_temperature_batched(batches[i % 3], 0.8) for i in range(5)]
    assert all(torch.equal(course(), w) for w in want)
    assert torch.equal(course_kept(), want[0]) and torch.equal(course_kept(), want[0])


def record(values: dict, load_before=(0.1, 0.2, 0.3)) -> dict:
    """A run's record as the benches write it (``report.run_record``), with made-up figures."""
    from course_lib.bench import report
    figures = [report.Figure("[64, V], 1 thread", row, column, value, unit, goal)
               for (row, column, unit, goal), value in values.items()]
    return report.run_record(figures, list(load_before))


def test_a_figure_is_published_only_when_the_runs_reproduce_it_within_20_percent():
    from course_lib.bench import report
    assert report.reproduced([4.0, 4.4, 4.8]) and not report.reproduced([4.0, 4.4, 4.81])
    assert not report.reproduced([0.0, 0.0])
    top_p, temp = ("top-p 0.9", "course / floor", "×", 5.0), ("temperature", "course, ms", "ms", None)
    runs = [record({top_p: 4.1, temp: 2.0}), record({top_p: 4.6, temp: 3.1}), record({top_p: 4.3, temp: 2.2})]
    text = report.markdown(runs, "Sampling")
    assert "| top-p 0.9 | 4.30× ✓ |  |" in text                 # the median, its goal met
    assert "| temperature |  | not reproduced (2.00 ms–3.10 ms) |" in text
    assert text.count("load average 0.10 0.20 0.30 before") == 3 and "Run 3:" in text
    assert report.cpu_model() in text and "numpy" in text
    one = report.markdown([record({top_p: 5.2})], "Sampling")
    assert "| top-p 0.9 | 5.20× ✗ |" in one and "median" not in one      # one run: its values, goal missed


def test_repeat_passes_on_the_arguments_without_its_own():
    from course_lib.bench.report import without
    assert without(["--rows", "64", "--repeat", "3", "--markdown"], "--markdown", valued=("--repeat",)) == ["--rows", "64"]
    assert without(["--repeat=3", "--threads", "1"], valued=("--repeat",)) == ["--threads", "1"]
