"""The proof that no weights print the article's 0.370652 (course_lib.toys.loss_last_bound)."""
import json
import random
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest

from course_lib.figures import margins
from course_lib.figures.registry import figure, to_float32
from course_lib.figures.interface import toy_loss_last
from course_lib.toys import derive_five_token, loss_last_bound as B
from course_lib.toys.five_token import FIVE_TOKEN

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def cert():
    return B.certificate()


def ten(x) -> str:
    return f"{Decimal(x):.10f}" if not isinstance(x, Fraction) else f"{B.to_decimal(x):.10f}"


def test_no_weights_print_the_articles_six_decimals(cert):
    assert cert.six_decimals == Decimal("0.3706515")
    assert Decimal("0.37065149") < cert.float32 < cert.six_decimals      # L's float32 flips a bit earlier
    assert cert.course.loss <= cert.any_weights.loss < cert.float32
    assert not cert.reachable
    for bound in (cert.any_weights.loss, cert.course.loss):
        assert margins.text_of(float(bound), 6) == "0.370651"
        assert margins.text_of(to_float32(float(bound)), 6) == "0.370651"
    # the gap is far beyond the 50-digit arithmetic and any float64 doubt
    assert cert.float32 - cert.any_weights.loss > Decimal("3e-9")
    # the margins the tests require only narrow the intervals: the bounds drop further
    h2, logits = B.h2_intervals(margin=True), B.logit_intervals(margin=True)
    assert all(a.low > b.low and a.high < b.high for a, b in zip(h2 + logits, cert.h2 + cert.logits))
    assert B.bound_any_weights(h2, logits).loss < cert.any_weights.loss
    assert B.bound_course_weights(h2, logits).loss < cert.course.loss


def test_the_bound_says_reachable_when_h2_does_not_pin_z1(cert):
    """The method can fail the other way: with z₁ free inside its own float32 interval (a
    first, looser estimate), the best corner is 0.3706515154, which would print 0.370652."""
    loose = [B.Interval(h.name, h.printed, h.low - Fraction(1, 10**6), h.high) for h in cert.h2]
    bound = B.bound_any_weights(loose, cert.logits)
    assert bound.loss > cert.six_decimals
    assert ten(bound.loss) == "0.3706515154"
    assert "z₁ at the bottom" in bound.binding


def test_the_best_corner_of_the_course_weights_is_allowed(cert):
    h2 = cert.course.h2
    assert sum(h2) == 0                                             # a LayerNorm output's mean
    assert all(iv.low <= x <= iv.high for iv, x in zip(cert.h2, h2))
    weight, bias = B.course_lm_head()
    z = [sum(w * x for w, x in zip(row, h2)) + b for row, b in zip(weight, bias)]
    assert z == cert.course.logits
    assert all(iv.low <= x <= iv.high for iv, x in zip(cert.logits, z))
    assert B.loss_of(z) == cert.course.loss
    assert {"h₂[0] at the bottom", "h₂[1] at the bottom", "h₂[2] at the bottom",
            "h₂[3] at the top"} <= set(cert.course.binding)


def test_the_any_weights_point_pins_z1_through_h2(cert):
    z1 = cert.any_weights.logits[1]
    assert z1 == Fraction(0.1) + cert.h2[0].low + cert.h2[2].low
    assert cert.logits[1].low < z1                                   # tighter than z₁'s own interval
    assert [cert.logits[j].high for j in (0, 2, 3, 4)] == [cert.any_weights.logits[j] for j in (0, 2, 3, 4)]


def random_allowed_h2(cert, rng):
    """An h₂ with a mean of 0 inside the four intervals (None if the draw misses)."""
    slack = -sum(iv.low for iv in cert.h2)          # how far above the bottoms the entries must sum
    shares = [Fraction(rng.randint(1, 10**6)) for _ in cert.h2]
    h2 = [iv.low + slack * s / sum(shares) for iv, s in zip(cert.h2, shares)]
    return h2 if all(x <= iv.high for iv, x in zip(cert.h2, h2)) else None


def test_no_allowed_point_beats_the_bound(cert):
    rng = random.Random(23)
    weight, bias = B.course_lm_head()
    draws = [h2 for h2 in (random_allowed_h2(cert, rng) for _ in range(1000)) if h2 is not None]
    assert len(draws) > 100
    allowed = 0
    for h2 in draws[:300]:
        z = [sum(w * x for w, x in zip(row, h2)) + b for row, b in zip(weight, bias)]
        if all(iv.low <= x <= iv.high for iv, x in zip(cert.logits, z)):
            allowed += 1
            assert B.loss_of(z) <= cert.course.loss
        # any logits inside their intervals, z₁ no lower than h₂ allows
        free = [Fraction(rng.random()) for _ in z]
        others = [iv.low + f * iv.width for iv, f in zip(cert.logits, free)]
        others[1] = max(others[1], cert.any_weights.logits[1])
        assert B.loss_of(others) <= cert.any_weights.loss
    assert allowed > 100


def test_the_shipped_weights_are_one_allowed_point(cert):
    loss = toy_loss_last(FIVE_TOKEN.load())["loss"].item()
    assert loss <= cert.course.loss
    assert float(cert.course.loss) - loss < 1e-7


def test_the_digits_do_not_depend_on_the_arithmetics_precision(cert, monkeypatch):
    monkeypatch.setattr(B, "DIGITS", 80)
    again = B.certificate()
    assert ten(again.any_weights.loss) == ten(cert.any_weights.loss) == "0.3706514951"
    assert ten(again.course.loss) == ten(cert.course.loss) == "0.3706514774"


def test_solve_is_exact_and_refuses_a_singular_system():
    assert B.solve([[Fraction(2), Fraction(1)], [Fraction(1), Fraction(3)]], [Fraction(1), Fraction(2)]) == [
        Fraction(1, 5), Fraction(3, 5)]
    assert B.solve([[Fraction(1), Fraction(2)], [Fraction(2), Fraction(4)]], [Fraction(1), Fraction(2)]) is None


def test_the_article_row_b_is_the_course_lm_heads_row_b():
    weight, bias = B.course_lm_head()
    spec = figure("interface.toy.z1")["values"]
    assert weight[1] == [Fraction(w) for w in spec["head_row_b"]["expected"]]
    assert bias[1] == Fraction(spec["bias_b"]["expected"])


def test_the_registry_the_weights_note_and_notebook_06_show_the_certificate(cert):
    spec = figure("interface.toy.loss_last")["values"]["loss"]
    assert spec["tol"] <= 1e-6 and spec["decimals"] == 6       # one unit of the last decimal, no more
    quoted = [ten(cert.any_weights.loss), ten(cert.course.loss), ten(cert.float32), "0.3706515"]
    reason = spec["tol_reason"]
    note = (ROOT / "data" / "five_token_model.md").read_text(encoding="utf-8")
    for text in quoted:
        assert text in reason and text in note, text
    assert ten(cert.any_weights.logits[1]) in note                 # z₁'s lowest value
    for name in ("06_loss", "zh/06_loss"):
        cells = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]
        shown = "".join(o.get("text", "") if isinstance(o.get("text", ""), str) else "".join(o["text"])
                        for c in cells if c["cell_type"] == "code" for o in c.get("outputs", []))
        for text in quoted[:2]:
            assert text in shown, (name, text)


def test_the_certificate_is_printed_by_the_module_and_by_the_derivation(capsys, monkeypatch):
    B.main()
    alone = capsys.readouterr().out
    assert "out of reach" in alone and "0.3706514951" in alone and "0.3706514774" in alone
    # the derivation's main prints it after checking the figures (its solving is tested as slow)
    monkeypatch.setattr(derive_five_token, "derive_tables", lambda: FIVE_TOKEN.read_weights()["tables"])
    derive_five_token.main([])
    assert alone in capsys.readouterr().out
