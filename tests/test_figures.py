"""The figures registry: complete, well formed, every figure reproduced somewhere, checks that bite."""
import importlib.util
import json
import re
from pathlib import Path

import pytest

from course_lib.figures import registry as F

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ["01_tokenizer", "02_embeddings", "03_attention", "04_block", "05_lm_head", "06_loss", "07_sampling"]


def load_drift():
    """.ci/figure_ids_drift.py: the authors' comparison of tests/figure_ids.txt with the course's
    specification, kept beside the checkout by its authors (a fork has none: the tests never read it)."""
    spec = importlib.util.spec_from_file_location("figure_ids_drift", ROOT / ".ci" / "figure_ids_drift.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DRIFT = load_drift()
snapshot_ids = DRIFT.snapshot_ids


def test_the_snapshot_of_figure_ids_is_well_formed():
    ids = snapshot_ids()
    assert len(ids) == len(set(ids)) > 50, "tests/figure_ids.txt: duplicate ids, or too few"
    assert all(re.fullmatch(r"(interface|lab|decoding|gpt2)\.[a-z0-9_.]+", fid) for fid in ids), ids


def test_registry_holds_every_figure_of_the_snapshot_and_nothing_else():
    ids = set(snapshot_ids())
    registry = set(F.load_registry())
    assert registry == ids, (f"data/figures.json lacks {sorted(ids - registry)}; "
                             f"holds ids not in tests/figure_ids.txt: {sorted(registry - ids)}")


def test_the_drift_check_catches_an_added_and_a_removed_row(tmp_path, capsys):
    drift = DRIFT.drift
    ids = snapshot_ids()
    table = lambda rows: "\n".join(f"| {fid} | a figure | 1 | yes |" for fid in rows)   # noqa: E731
    assert drift(table(ids), ids) == ([], [])
    assert drift(table(ids + ["lab.new_figure"]), ids) == (["lab.new_figure"], [])
    assert drift(table(ids[1:]), ids) == ([], [ids[0]])
    # the script as the authors run it, on made-up specifications: agree, drift, absent
    spec = tmp_path / "figures.md"
    spec.write_text(table(ids), encoding="utf-8")
    assert DRIFT.main(["figure_ids_drift.py", str(spec)]) == 0
    assert f"{len(ids)} figure ids" in capsys.readouterr().out
    spec.write_text(table(ids[1:] + ["lab.new_figure"]), encoding="utf-8")
    assert DRIFT.main(["figure_ids_drift.py", str(spec)]) == 1
    err = capsys.readouterr().err
    assert "missing ['lab.new_figure']" in err and f"extra ['{ids[0]}']" in err
    assert DRIFT.main(["figure_ids_drift.py", str(tmp_path / "absent.md")]) == 2
    assert "no specification at" in capsys.readouterr().err


def test_registry_entries_are_well_formed():
    for fid, entry in F.load_registry().items():
        assert entry["article"] == fid.split(".")[0]
        assert entry["figure"] and entry["values"], fid
        assert set(entry["notebooks"]) <= set(NOTEBOOKS), fid
        assert isinstance(entry["needs_pretrained_weights"], bool)
        for name, spec in entry["values"].items():
            assert "expected" in spec, (fid, name)
            assert set(spec) <= {"expected", "decimals", "tol", "note", "float32", "truncated", "source", "source_reason", "tol_reason"}, (fid, name)


def sources():
    """(where, text) of every test module and every notebook's code cells."""
    found = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in sorted((ROOT / "tests").glob("*.py"))]
    for name in NOTEBOOKS:
        path = ROOT / "notebooks" / f"{name}.ipynb"
        if path.is_file():
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            found.append((name, "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")))
    return found


def checked_ids(text):
    return set(re.findall(r"check_(?:figure|inline)\(\s*[\"']([a-z0-9_.]+)[\"']", text))


def test_every_figure_is_reproduced_by_a_test_and_by_exactly_the_notebooks_listed():
    found = sources()
    in_tests = set().union(*(checked_ids(t) for w, t in found if w.startswith("tests")))
    by_notebook = {w: checked_ids(t) for w, t in found if not w.startswith("tests")}
    registry = F.load_registry()
    missing_tests = sorted(set(registry) - in_tests)
    # the registry's "notebooks" of a figure: exactly the notebooks whose code checks it
    wrong_nb = {fid: (sorted(e["notebooks"]), sorted(nb for nb, ids in by_notebook.items() if fid in ids))
                for fid, e in registry.items()
                if set(e["notebooks"]) != {nb for nb, ids in by_notebook.items() if fid in ids}}
    assert not missing_tests, f"figures no test checks: {missing_tests}"
    assert not wrong_nb, f"figures whose listed notebooks (registry, checked by code) differ: {wrong_nb}"


def test_check_figure_prints_at_article_precision_and_accepts_rounding(capsys):
    F.check_figure("interface.toy.attention",
                   weights=[[1.0, 0.0, 0.0], [0.019004, 0.980996, 0.0], [0.46834, 0.01006, 0.52160]])
    assert capsys.readouterr().out == ("✓ interface.toy.attention · weights = "
                                       "[[1.0000, 0.0000, 0.0000], [0.0190, 0.9810, 0.0000], [0.4683, 0.0101, 0.5216]]\n")


def test_check_figure_raises_on_a_wrong_value_and_names_it():
    with pytest.raises(F.FigureMismatch, match=r"weights.*\[2\]\[0\].*0.4683"):
        F.check_figure("interface.toy.attention",
                       weights=[[1.0, 0.0, 0.0], [0.019, 0.981, 0.0], [0.4690, 0.0101, 0.5209]])
    with pytest.raises(F.FigureMismatch, match="expected 5 entries"):
        F.check_figure("interface.tok.hi_ni", ids=[17250, 220, 19526, 254])
    with pytest.raises(F.FigureMismatch):
        F.check_figure("gpt2.greedy", text="The meaning of life is a")
    with pytest.raises(F.FigureMismatch):
        F.check_figure("interface.toy.h2", h2=[0.9546803832, -1.0673931837, 1.0419750214, float("nan")])


def test_check_figure_rejects_unknown_ids_and_names():
    with pytest.raises(KeyError, match="no figure"):
        F.check_figure("interface.toy.nope", x=1)
    with pytest.raises(KeyError, match="has no value"):
        F.check_figure("interface.tying", tide=1)
    with pytest.raises(ValueError, match="at least one value"):
        F.check_figure("interface.tying")


def test_full_float_figures_must_match_to_the_last_digit():
    logits = F.expected("interface.toy.logits", "logits")
    F.check_figure("interface.toy.logits", logits=logits)
    import numpy as np
    nudged = list(logits)
    # one step in the last place of the printed value: the next float32 if the article's
    # logits are float32 results, else the next float64
    step_type = np.float32 if F.figure("interface.toy.logits")["values"]["logits"].get("float32") else np.float64
    nudged[0] = float(np.nextafter(step_type(nudged[0]), step_type(2)))
    with pytest.raises(F.FigureMismatch):
        F.check_figure("interface.toy.logits", logits=nudged)


def test_negative_zero_prints_without_sign():
    assert F.format_value(-0.00001, 4) == "0.0000"
    assert F.format_value([-1.5, 2], 2) == "[-1.50, 2]"


def test_a_missing_data_file_says_what_and_how_to_restore(tmp_path):
    from course_lib.toys.five_token import FIVE_TOKEN
    with pytest.raises(FileNotFoundError, match=r"five-token model.*git checkout -- data/"):
        FIVE_TOKEN.load(tmp_path / "five_token_model.json")


# --- "float32" and "truncated" value specs --------------------------------------------------

def _registry_with(monkeypatch, values):
    """A one-figure registry ``test.fig`` with the given value specs (the real one untouched)."""
    fake = {"test.fig": {"figure": "a test figure", "article": "interface", "notebooks": [],
                         "needs_pretrained_weights": False, "values": values}}
    monkeypatch.setattr(F, "load_registry", lambda: fake)


def test_float32_values_are_rounded_to_float32_before_an_exact_compare(monkeypatch, capsys):
    import numpy as np
    import torch
    target = float(np.float32(0.1))                      # 0.10000000149011612
    _registry_with(monkeypatch, {"x": {"expected": target, "decimals": None, "float32": True},
                                 "v": {"expected": [target, 2.5], "decimals": None, "float32": True}})
    F.check_figure("test.fig", x=0.1)                    # float64 0.1 rounds to the float32 value
    F.check_figure("test.fig", x=torch.tensor(0.1, dtype=torch.float64))
    F.check_figure("test.fig", v=torch.tensor([0.1, 2.5], dtype=torch.float64))
    assert capsys.readouterr().out.splitlines()[0] == f"✓ test.fig · x = {target!r}"
    # just across the boundary: the next float32 on either side fails
    above = float(np.nextafter(np.float32(target), np.float32(1)))
    below = float(np.nextafter(np.float32(target), np.float32(0)))
    for wrong in (above, below):
        with pytest.raises(F.FigureMismatch):
            F.check_figure("test.fig", x=wrong)
    # a float64 that rounds (to nearest) onto the next float32 fails; one still inside passes
    half_up = (target + above) / 2 + 1e-17
    with pytest.raises(F.FigureMismatch):
        F.check_figure("test.fig", x=half_up)
    F.check_figure("test.fig", x=(target + above) / 2 - 1e-17)


def test_float32_with_decimals_uses_the_half_unit_tolerance_after_rounding(monkeypatch):
    _registry_with(monkeypatch, {"x": {"expected": 0.1235, "decimals": 4, "float32": True}})
    F.check_figure("test.fig", x=0.12345)                # float32(0.12345) = 0.123450003… ≥ 0.12345
    with pytest.raises(F.FigureMismatch):
        F.check_figure("test.fig", x=0.12344)
    assert F.to_float32([1, True, "a", 0.1]) == [1, True, "a", 0.10000000149011612]


def test_truncated_values_pass_only_inside_the_printed_digits(monkeypatch, capsys):
    _registry_with(monkeypatch, {"p": {"expected": 0.690284, "decimals": 6, "truncated": True},
                                 "n": {"expected": -0.690284, "decimals": 6, "truncated": True}})
    for inside in (0.690284, 0.6902844, 0.6902849, 0.69028499999):
        F.check_figure("test.fig", p=inside)
    assert capsys.readouterr().out.splitlines()[1] == "✓ test.fig · p = 0.690284…"
    for outside in (0.690285, 0.6902839999, 0.6902835, 0.69029):
        with pytest.raises(F.FigureMismatch, match=r"test.fig · p.*0\.690284…"):
            F.check_figure("test.fig", p=outside)
    F.check_figure("test.fig", n=-0.6902849)            # truncation is toward zero
    for outside in (-0.690285, -0.690283):
        with pytest.raises(F.FigureMismatch):
            F.check_figure("test.fig", n=outside)


def test_truncation_uses_the_exact_binary_value():
    # 0.690286 as a double is 0.69028599999999995…: truncated to 6 digits it is 0.690285
    assert str(F.truncate(0.690286, 6)) == "0.690285"
    assert str(F.truncate(0.690285, 6)) == "0.690285"     # 0.69028500000000003…
    assert str(F.truncate(0.6902849, 6)) == "0.690284"
    assert F.format_truncated(-1e-9, 6) == "0.000000…"


def test_the_articles_truncated_probability_is_checked_by_truncation():
    spec = F.figure("interface.toy.loss_last")["values"]["p_target"]
    assert spec.get("truncated") and spec["decimals"] == 6 and "tol" not in spec


# --- the registry holds each figure to the article's printed precision ----------------------

def half_unit(spec) -> float:
    """Half a unit of the printed precision: what "rounds to the printed digits" allows."""
    decimals = spec.get("decimals")
    return 0.0 if decimals is None else 0.5 * 10.0 ** (-decimals)


def test_every_tolerance_is_within_the_printed_precision_or_says_why():
    loose = []
    for fid, entry in F.load_registry().items():
        for name, spec in entry["values"].items():
            if "tol_reason" in spec:
                assert isinstance(spec["tol_reason"], str) and len(spec["tol_reason"]) > 20, (fid, name)
                assert "tol" in spec, f"{fid} · {name}: a tol_reason without a tol"
                continue
            if "tol" in spec and float(spec["tol"]) > half_unit(spec):
                loose.append(f"{fid} · {name}: tol {spec['tol']} > {half_unit(spec):g} "
                             f"(half a unit of {spec.get('decimals')} d.p.)")
    assert not loose, "tolerances wider than the article's printed digits, with no tol_reason:\n" + "\n".join(loose)


def test_course_values_are_marked_with_a_reason():
    registry = F.load_registry()
    for fid, entry in registry.items():
        for name, spec in entry["values"].items():
            assert spec.get("source", "article") in {"article", "course"}, (fid, name)
            if spec.get("source") == "course":
                assert len(spec.get("source_reason", "")) > 20, f"{fid} · {name}: say why it is the course's"
            else:
                assert "source_reason" not in spec, (fid, name)
    # the values the articles never print: the course's own, and said so
    for fid, name in [("interface.tying", "tied"), ("interface.tying", "untied"),
                      ("interface.tok.hi_ni", "ni_utf8"), ("lab.partial_utf8", "utf8"),
                      ("decoding.loop", "final_shape"), ("interface.draws", "frequencies")]:
        assert registry[fid]["values"][name].get("source") == "course", (fid, name)
    # a statistical band is the course's, never presented as the article's precision
    assert "tol_reason" in registry["interface.draws"]["values"]["frequencies"]


def test_exact_premises_of_the_toy_model_are_exact():
    for fid, name in [("interface.toy.vocab", "dropout"), ("interface.toy.layernorm", "scale"),
                      ("interface.toy.layernorm", "offset")]:
        assert F.figure(fid)["values"][name].get("tol") == 0, (fid, name)
    with pytest.raises(F.FigureMismatch):
        F.check_figure("interface.toy.vocab", dropout=0.01)       # would print 0.0 at 1 d.p.
    with pytest.raises(F.FigureMismatch):
        F.check_figure("interface.toy.layernorm", scale=1.0 + 1e-9)


WEIGHT_INDEPENDENT_TOY = {"interface.toy.vocab", "interface.toy.x0", "interface.toy.mlp",
                          "interface.toy.head_shape", "interface.toy.targets"}


def test_figures_the_toy_weights_were_solved_from_are_flagged():
    registry = F.load_registry()
    flagged = {fid: e["weights_derived_from"] for fid, e in registry.items() if "weights_derived_from" in e}
    assert set(flagged.values()) <= set(F.DERIVATIONS)
    for path in F.DERIVATIONS:
        assert (ROOT / path).is_file(), path
    toy = {fid for fid in registry if fid.startswith("interface.toy.")}
    assert {fid for fid in toy if flagged.get(fid) == "data/five_token_model.json"} == toy - WEIGHT_INDEPENDENT_TOY
    lab = {fid for fid, path in flagged.items() if path == "data/lab_model.json"}
    assert all(registry[fid]["computer"].startswith("course_lib.figures.lab:") for fid in lab) and len(lab) >= 9
    assert all(not registry[fid]["needs_pretrained_weights"] for fid in flagged)


def test_registry_entries_carry_only_known_keys():
    known = {"figure", "article", "notebooks", "needs_pretrained_weights", "computer", "values", "weights_derived_from"}
    for fid, entry in F.load_registry().items():
        assert set(entry) <= known, (fid, set(entry) - known)
        assert entry["article"] in F.ARTICLES, fid


# --- a failure says what to look at ---------------------------------------------------------

def test_a_mismatch_names_figure_article_registry_entry_and_both_values():
    with pytest.raises(F.FigureMismatch) as caught:
        F.check_figure("interface.toy.attention",
                       weights=[[1.0, 0.0, 0.0], [0.019, 0.981, 0.0], [0.4690, 0.0101, 0.5209]])
    text = str(caught.value)
    assert text.startswith("interface.toy.attention · weights does not reproduce the article")
    assert "A few input rows, a full vocabulary of outputs" in text
    assert 'data/figures.json → "interface.toy.attention" → values → "weights"' in text
    assert "computed: [[1.0000, 0.0000, 0.0000], [0.0190, 0.9810, 0.0000], [0.4690, 0.0101, 0.5209]]" in text
    assert "article:  [[1.0000, 0.0000, 0.0000], [0.0190, 0.9810, 0.0000], [0.4683, 0.0101, 0.5216]]" in text
    assert "computed in full: [[1.0, 0.0, 0.0], [0.019, 0.981, 0.0], [0.469, 0.0101, 0.5209]]" in text
    # the toy weights were solved from this figure: say which files to compare and how
    assert "data/five_token_model.json" in text and "changed since the weights were derived" in text
    assert "course_lib.toys.derive_five_token" in text


def test_a_mismatch_in_a_figure_of_no_weight_file_says_no_weight_file():
    with pytest.raises(F.FigureMismatch) as caught:
        F.check_figure("decoding.gap_01", ratio=1.104)
    text = str(caught.value)
    assert "From scores to a token" in text and "weights:" not in text
    assert "computed in full: 1.104 (0x1." in text


def test_a_mismatch_of_a_course_value_says_it_is_the_courses():
    with pytest.raises(F.FigureMismatch, match="the course's own value"):
        F.check_figure("interface.tying", tied=38597377)


def test_reproduced_ids_are_logged_when_asked(tmp_path, monkeypatch, capsys):
    log = tmp_path / "figures.log"
    monkeypatch.setenv("COURSE_FIGURE_LOG", str(log))
    F.check_figure("decoding.gap_01", ratio=F.expected("decoding.gap_01", "ratio"))
    with pytest.raises(F.FigureMismatch):
        F.check_figure("decoding.gap_01", ratio=2.0)
    assert log.read_text() == "decoding.gap_01\n"


# --- one computer per figure -----------------------------------------------------------------

def test_every_figure_names_a_computer_that_exists_in_its_articles_module():
    from course_lib.figures import computer
    for fid, entry in F.load_registry().items():
        article = fid.split(".")[0]
        assert entry["computer"].startswith(f"course_lib.figures.{article}:"), fid
        assert callable(computer(fid)), fid


def test_every_offline_computer_reproduces_its_figure(capsys):
    """Each offline figure, from its registered computer, passes check_figure (gpt2.logits_shape
    on GPT-2's architecture with random weights: it is about shapes)."""
    from course_lib.figures.computers import compute, computed_figures, needs_arguments
    from course_lib.gpt2 import random_gpt2
    from course_lib.tokens.bpe import gpt2_encoding
    offline = {fid for fid, e in F.load_registry().items() if not e["needs_pretrained_weights"]}
    values = computed_figures()
    assert set(values) == offline - {"gpt2.logits_shape"}
    assert needs_arguments("gpt2.logits_shape")
    values["gpt2.logits_shape"] = compute("gpt2.logits_shape", random_gpt2(), gpt2_encoding())
    for fid, computed in values.items():
        assert set(computed) == set(F.figure(fid)["values"]), fid      # every value of the entry
        F.check_figure(fid, **computed)
    assert len(capsys.readouterr().out.splitlines()) == sum(len(F.figure(fid)["values"]) for fid in values)


def test_an_inline_value_that_is_not_the_computers_fails_before_any_check(capsys):
    from course_lib.figures import check_inline
    from course_lib.figures.computers import InlineDrift
    from course_lib.figures import compute
    check_inline("decoding.gap_01", ratio=compute("decoding.gap_01")["ratio"] * (1 + 1e-14))   # float64 rounding
    assert capsys.readouterr().out.startswith("✓ decoding.gap_01 · ratio = ")
    with pytest.raises(InlineDrift, match=r"decoding.gap_01 · ratio.*course_lib.figures.decoding:gap_01"):
        check_inline("decoding.gap_01", ratio=1.10517)     # prints the same digits, but is not the computer's
    with pytest.raises(InlineDrift, match="interface.interval · picks"):
        check_inline("interface.interval", picks=[[0.5, 1], [0.05, 0], [0.93, 4], [0.95, 4], [0.2203, 1]])
    assert capsys.readouterr().out == ""
