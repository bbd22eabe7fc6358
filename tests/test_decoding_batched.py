"""The batched rules keep exactly the ids the per-row teaching rules keep, on GPT-2-sized rows."""
import math
import warnings
from array import array
from itertools import accumulate

import numpy
import pytest
import torch

from course_lib import decoding as S
from course_lib import decoding as SB

from _exact import assert_close
from _threads import one_thread

B, V = 64, 50_257


@pytest.fixture(scope="module")
def probs():
    """[64, 50257] float32 probabilities: half the rows from logits rounded to 1 decimal
    (thousands of exact ties), some with −inf logits, a few very peaked rows, and rows whose
    leader is so far ahead that every other probability underflows to exactly 0."""
    torch.manual_seed(1234)
    logits = torch.randn(B, V) * 2.0
    logits[::2] = torch.round(logits[::2] * 10) / 10              # ties everywhere
    logits[1::8, :1000] = -math.inf                                # masked ids
    logits[3::8, 7] = 25.0                                         # a 99.9% leader
    logits[7::16, 11] = 150.0                                      # the others underflow to 0
    return SB.softmax_with_temperature_batched(logits, 0.8)


def rows_as_sets(mask):
    return [set(torch.nonzero(row).flatten().tolist()) for row in mask]


def as_mask(ids: list[int], size: int = V) -> torch.Tensor:
    """[size] bool: True at the listed ids (the same test as comparing id sets, without a
    ``nonzero`` per row)."""
    assert not ids or (min(ids) >= 0 and max(ids) < size), "an id outside the row"
    mask = numpy.zeros(size, dtype=bool)
    mask[numpy.array(ids, dtype=numpy.int64)] = True     # set by numpy: torch indexed by a list of
    return torch.from_numpy(mask)                         # ids takes ~25x longer, the same mask


CASES = [
    (SB.top_k_mask, S.top_k_ids, [1, 2, 50, 40_000, 60_000]),
    (SB.top_p_mask, S.top_p_ids, [0.1, 0.5, 0.9, 0.95, 1.0]),
    (SB.gpt2_legacy_top_p_mask, S.gpt2_legacy_top_p_ids, [0.5, 0.9]),
    (SB.min_p_mask, S.min_p_ids, [0.0, 0.05, 0.3, 1.0]),
]
ROWS = [0, 1, 3]   # a tied row, a row with -inf logits, a peaked row; the slow-marked test takes all 64
FAST_B = 8         # rows of 50,257 filtered by the quick checks (the 2-core budget)


@pytest.fixture(scope="module")
def row_lists(probs):
    return [row.tolist() for row in probs]


@pytest.mark.parametrize("batched, per_row, values", CASES)
def test_batched_filters_keep_the_same_ids(probs, row_lists, batched, per_row, values, rows=ROWS):
    batch = probs[:max(rows) + 1]
    for value in values:
        mask = batched(batch, value)
        assert mask.shape == (batch.shape[0], V) and mask.dtype == torch.bool
        with one_thread():
            for b in rows:
                assert torch.equal(as_mask(per_row(row_lists[b], value)), mask[b]), (value, b)


@pytest.fixture(scope="module")
def rankings():
    """Row (its exact float64 bytes) -> ``ranked_ids(row)``, filled as the rows come."""
    return {}


@pytest.fixture
def each_row_sorted_once(rankings, monkeypatch):
    """The per-row rules, unchanged, with two pure functions of the row computed once per row
    and shared by every rule and value: ``ranked_ids`` (a sort of 50,257 floats, ~3/4 of a
    per-row call; GPT-2's legacy top-p sorts three times per call) — 64 sorts instead of
    ~1,400 — and ``check_probs`` (a pass over the row's 50,257 values). Each call gets its own
    copy of a ranking; a bug in either function reaches every call as before."""
    from course_lib.decoding import probs as P, rules as R, variants as VR
    real_ranked, real_check = P.ranked_ids, R.check_probs
    checked = {}                       # id(row given) -> (that row, its checked floats): this test's
    ranked = {}                        # id(checked floats) -> ranking, for those lists only

    def check_probs(probs, *args, **kwargs):
        if not isinstance(probs, list) or args or kwargs:
            return real_check(probs, *args, **kwargs)
        if id(probs) not in checked or checked[id(probs)][0] is not probs:
            checked[id(probs)] = (probs, real_check(probs))
        return checked[id(probs)][1]

    def ranked_ids(values):
        if not isinstance(values, list):
            return real_ranked(values)
        if id(values) in ranked and any(values is q for _, q in checked.values()):
            return list(ranked[id(values)])
        key = array("d", values).tobytes()
        if key not in rankings:
            rankings[key] = tuple(real_ranked(values))
        if any(values is q for _, q in checked.values()):
            ranked[id(values)] = rankings[key]
        return list(rankings[key])

    monkeypatch.setattr(R, "check_probs", check_probs)
    for module in (R, VR):
        monkeypatch.setattr(module, "ranked_ids", ranked_ids)


@pytest.mark.slow
@pytest.mark.parametrize("batched, per_row, values", CASES)
def test_batched_filters_keep_the_same_ids_every_row(probs, row_lists, batched, per_row, values, each_row_sorted_once):
    test_batched_filters_keep_the_same_ids(probs, row_lists, batched, per_row, values, rows=range(B))


def test_a_softmax_normalised_as_on_arm_goes_through_every_rule(probs):
    """torch's float32 softmax divides by a row sum its kernel adds in a few vector lanes: on ARM
    (NEON, measured under emulation) rows of 50,257 sum to 1 ± ~1.2e-5. Rows scaled by 1 ± 3e-5
    go through every rule, batched and per row, keeping the same ids both ways; weights that were
    never normalised are still refused."""
    with one_thread():
        for scale in (1 + 3e-5, 1 - 3e-5):
            q = probs[:2] * scale
            row = q[0].tolist()
            for batched, per_row, values in CASES:
                assert torch.equal(batched(q, values[1])[0], as_mask(per_row(row, values[1]))), (scale, per_row)
    for bad in (probs[:2] * 1.01, probs[:2] * 0.99):
        with pytest.raises(ValueError, match="must sum to 1"):
            SB.top_p_mask(bad, 0.9)
        with pytest.raises(ValueError, match="must sum to 1"):
            S.top_p_ids(bad[0].tolist(), 0.9)


def test_top_p_decides_exactly_where_the_running_sum_meets_p(probs):
    """The batched top-p adds a row's largest values in ranked order in float64 — the per-row
    rule's own sum — and sorts only the largest 4,096 first (a wider nucleus: the whole row).
    With p set to a running sum itself and to the float64 values just below and above it, at
    places inside and beyond that width, the kept sets are the per-row rule's: on a tied row, a
    row with −inf logits, a plain row, a peaked row and an underflowing one, float32 and float64,
    single rows and the batch."""
    from course_lib.decoding.probs import ranked_ids
    from course_lib.decoding.rules import TOP_P
    rows = [0, 1, 2, 3, 7]
    places = [0, 1, 17, 4094, 4095, 4096, 4097, 30_000, 32_767, 32_768, V - 2]
    checked = 0
    # The per-row rule's answers, computed once: a float32 row and its float64 copy are the same
    # Python floats (the copy is exact), so both get the same ranking, sums and kept ids.
    lists = [row.tolist() for row in probs[rows]]
    assert lists == [row.tolist() for row in probs[rows].double()]
    orders = [ranked_ids(row) for row in lists]
    expected_for = {}
    with one_thread():
        for q in (probs[rows], probs[rows].double()):
            for b, (row, order) in enumerate(zip(lists, orders)):
                sums = list(accumulate(row[i] for i in order))
                targets = {t for j in places if 0 < sums[j] <= 1
                           for t in (sums[j], math.nextafter(sums[j], 0), math.nextafter(sums[j], 2))}
                for p in sorted(t for t in targets if 0 < t <= 1):
                    if (b, p) not in expected_for:
                        expected_for[b, p] = as_mask(TOP_P.ids(row, p, order, None))
                    expected = expected_for[b, p]
                    assert torch.equal(SB.top_p_mask(q[b:b + 1], p)[0], expected), (q.dtype, rows[b], p)
                    assert torch.equal(SB.top_p_mask(q, p)[b], expected), (q.dtype, rows[b], p)
                    checked += 1
    assert checked >= 150


def test_top_k_from_the_logits_alone_keeps_the_same_ids():
    """keep_mask(TOP_K, None, k, logits): no probabilities needed, the same ids as with them."""
    from course_lib.decoding.rules import TOP_K, TOP_P, keep_mask
    torch.manual_seed(7)
    logits = torch.round(torch.randn(FAST_B, V) * 20) / 10                  # ties at the cut
    logits[1, :500] = -math.inf
    for k in (1, 50, 1000):
        expected = keep_mask(TOP_K, SB.softmax_with_temperature_batched(logits, 1.0), k, logits)
        assert torch.equal(keep_mask(TOP_K, None, k, logits), expected)
        assert int(expected.sum()) == FAST_B * k
    with pytest.raises(ValueError, match="only top-k"):
        keep_mask(TOP_P, None, 0.9, logits)


def relative_gap(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(((a.double() - b.double()).abs() / b.double().abs()).max())


def softmax_gaps(rows: torch.Tensor, t: float, p: torch.Tensor, exact: torch.Tensor) -> dict:
    """For a failure's message: how far each of the fast path's answer ``p`` and the float64
    softmax ``exact`` is from numpy's float64 softmax of the same rows, and the same for both
    computed again now (a gap that went away points at a passing state of torch, one that stays
    at the code)."""
    z = rows.double().numpy() / t
    weights = numpy.exp(z - z.max(axis=-1, keepdims=True))
    reference = torch.from_numpy(weights / weights.sum(axis=-1, keepdims=True))
    return {"fast path": relative_gap(p, reference), "float64 softmax": relative_gap(exact[:len(rows)], reference),
            "fast path again": relative_gap(SB.softmax_with_temperature_batched(rows, t), reference),
            "float64 softmax again": relative_gap(SB.softmax64_batched(rows.double(), t), reference),
            "threads": torch.get_num_threads(), "capability": torch.backends.cpu.get_cpu_capability()}


def test_batched_softmax_checks_its_input_through_its_output():
    """softmax_with_temperature_batched checks the logits by the first column of its output (a bad
    row makes every probability NaN): each kind of bad row still raises, in a small batch and in
    a large one (where torch shares the work among its threads), a finite z / τ that overflows
    float32 still gives the stable softmax, the result is torch.softmax(z × 1/τ) exactly and
    agrees with the float64 softmax up to float32 rounding, and rows near the probability-sum
    limit are judged in float64 (check_prob_rows sums in float32 first)."""
    z = torch.randn(3, 50)
    large = 500                                        # copies of z that make a large batch
    for bad, message in ((math.nan, "NaN"), (math.inf, r"\+inf")):
        rows = z.clone()
        rows[1, 17] = bad
        for batch in (rows, rows.repeat(large, 1)):
            with pytest.raises(ValueError, match=message):
                SB.softmax_with_temperature_batched(batch, 0.8)
    rows = z.clone()
    rows[2] = -math.inf
    for batch in (rows, rows.repeat(large, 1)):
        with pytest.raises(ValueError, match="all -inf"):
            SB.softmax_with_temperature_batched(batch, 0.8)
    huge = z.clone()
    huge[0, 3] = 3e38                                  # finite, but 3e38 / 0.5 is inf in float32
    for rows in (huge, huge.repeat(large, 1)):         # the overflow is handled: no warning
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            p = SB.softmax_with_temperature_batched(rows, 0.5)
        assert torch.isfinite(p).all() and p[0, 3] == 1.0
        assert torch.allclose(p[1:3], torch.softmax(z[1:].double() * 2.0, dim=-1).float(), rtol=1e-5, atol=0)
    wide = torch.randn(3, V, generator=torch.Generator().manual_seed(3)) * 3
    for t in (0.7, 1.0):
        exact = SB.softmax64_batched(wide.double(), t)
        # float32: the exponents round (~4e-6 here) and the kernel's row sum too (~1e-5 on ARM)
        for rows, rtol in ((wide, 5e-5), (wide.double(), 1e-13), (wide[:1], 5e-5)):
            p = SB.softmax_with_temperature_batched(rows, t)          # in place: the same numbers
            assert torch.equal(p, torch.softmax(rows * (1 / t), dim=-1)), (t, rows.shape, rows.dtype)
            # on a failure, what would say why (seen in full runs, never alone): how far, the
            # threads, whether torch's functions are still torch's, and which side is off
            assert torch.allclose(p.double(), exact[:len(rows)], rtol=rtol, atol=0), (
                t, rows.dtype, f"max relative difference {relative_gap(p, exact[:len(rows)]):.3g}",
                f"threads {torch.get_num_threads()}", torch.softmax, torch.exp, torch.cumsum, softmax_gaps(rows, t, p, exact))
    assert torch.equal(wide, torch.randn(3, V, generator=torch.Generator().manual_seed(3)) * 3)   # input untouched
    from course_lib.decoding.checks import PROB_TOL, check_prob_rows
    q = torch.full((2, 4), 0.25, dtype=torch.float64)
    q[0, 0] += 0.8 * PROB_TOL                          # within PROB_TOL of 1, beyond PROB_TOL / 2
    assert check_prob_rows(q) is q
    q[1, 0] += 2 * PROB_TOL
    with pytest.raises(ValueError, match="row 1 must sum to 1"):
        check_prob_rows(q)


def test_the_rows_really_have_ties_at_the_top_k_boundary(probs):
    sorted_row = torch.sort(probs[0], descending=True).values
    assert (sorted_row[49] == sorted_row[50]).item()    # k = 50 must break a tie by id


def test_strict_cut_batched_matches_per_row():
    torch.manual_seed(5)
    logits = torch.round(torch.randn(16, 2000) * 4) / 4
    for k in (1, 3, 10, 5000):
        mask = SB.top_k_strict_cut_mask(logits, k)
        for b in range(16):
            assert set(S.top_k_strict_cut(logits[b].tolist(), k)) == rows_as_sets(mask[b:b + 1])[0]
    assert (SB.top_k_strict_cut_mask(logits, 10).sum(-1) >= 10).all()


def test_full_pipeline_batched_matches_per_row(probs, row_lists):
    rules = [S.SamplingRule(top_k=40, top_p=0.9, min_p=0.05), S.SamplingRule(top_p=0.7, min_p=0.01),
             S.SamplingRule(top_k=2000, top_p=0.95), S.SamplingRule(greedy=True)]
    for rule in rules:
        mask, final = SB.filter_batched(rule, probs[:FAST_B])
        for b in ROWS:
            kept, row_final = rule.filter(row_lists[b])
            assert set(kept) == rows_as_sets(mask[b:b + 1])[0]
            assert row_final == final[b].tolist()                 # bit for bit
        assert torch.allclose(final.sum(-1), torch.ones(FAST_B, dtype=torch.float64))


def test_batched_softmax_and_greedy_agree_with_per_row():
    torch.manual_seed(2)
    logits = torch.randn(4, 300)
    logits[1, :5] = 40.0                                           # tie at the maximum
    p = SB.softmax_with_temperature_batched(logits, 0.7)
    for b in range(4):
        assert_close(p[b], S.softmax_with_temperature(logits[b], 0.7), rel=0, abs=1e-6, what=f"row {b}")
        assert SB.greedy_ids_batched(logits)[b] == S.greedy_id(logits[b])
    assert SB.greedy_ids_batched(logits)[1] == 0
    mask, final = SB.apply_batched(S.SamplingRule(greedy=True), logits)
    assert mask.sum(-1).tolist() == [1, 1, 1, 1]


def test_cumsum_adds_left_to_right_like_the_teaching_loop(probs):
    row = probs[5].double()
    total, sums = 0.0, []
    for v in row.tolist():
        total += v
        sums.append(total)
    assert torch.cumsum(row, 0).tolist() == sums


def test_interval_sampling_batched_matches_per_row():
    torch.manual_seed(3)
    q = torch.softmax(torch.randn(32, 50), -1)
    q[:, -3:] = 0                                           # trailing zero-length intervals
    q = q / q.sum(-1, keepdim=True)
    u = torch.rand(32, dtype=torch.float64)
    u[0] = 0.9999999999
    ids = SB.sample_interval_batched(q, u)
    for b in range(32):
        assert ids[b] == S.sample_interval(q[b].tolist(), float(u[b]))
    assert (ids < 47).all()


def test_sample_seeded_batched_is_reproducible():
    q = torch.softmax(torch.randn(8, 100, generator=torch.Generator().manual_seed(0)), -1)
    a = SB.sample_seeded_batched(q, torch.Generator().manual_seed(11))
    b = SB.sample_seeded_batched(q, torch.Generator().manual_seed(11))
    assert torch.equal(a, b) and a.shape == (8,)


BAD = [
    (lambda: SB.softmax_with_temperature_batched(torch.zeros(2, 3), 0.0), "temperature"),
    (lambda: SB.softmax_with_temperature_batched(torch.zeros(2, 3), math.nan), "temperature"),
    (lambda: SB.softmax_with_temperature_batched(torch.zeros(0, 3)), "logits"),
    (lambda: SB.softmax_with_temperature_batched(torch.zeros(2, 0)), "logits"),
    (lambda: SB.softmax_with_temperature_batched(torch.tensor([[0.0, math.nan]])), "logits"),
    (lambda: SB.softmax_with_temperature_batched(torch.tensor([[0.0, 1.0], [-math.inf, -math.inf]])), "logits"),
    (lambda: SB.softmax_with_temperature_batched(torch.zeros(3)), "logits"),
    (lambda: SB.top_k_mask(torch.full((1, 4), 0.25), 0), "top_k"),
    (lambda: SB.top_k_mask(torch.full((1, 4), 0.25), 2.5), "top_k"),
    (lambda: SB.top_p_mask(torch.full((1, 4), 0.25), 0.0), "top_p"),
    (lambda: SB.gpt2_legacy_top_p_mask(torch.full((1, 4), 0.25), 2.0), "top_p"),
    (lambda: SB.min_p_mask(torch.full((1, 4), 0.25), -0.5), "min_p"),
    (lambda: SB.sample_interval_batched(torch.full((1, 4), 0.3), torch.tensor([0.5])), "probs"),
    (lambda: SB.sample_interval_batched(torch.full((1, 4), 0.25), torch.tensor([1.0])), "u"),
]


@pytest.mark.parametrize("call, name", BAD)
def test_batched_bad_input_names_the_argument(call, name):
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        call()
