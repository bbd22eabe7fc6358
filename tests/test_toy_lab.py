"""The lab's twelve-token model: the shipped weights reproduce every offline lab figure.

Values are compared with the registry (data/figures.json) through check_figure; nothing the
article prints is typed here.
"""
import inspect
import re

import pytest
import torch

from course_lib.decoding.generate import generate
from course_lib.figures import FigureMismatch, check_figure, computer, load_registry
from course_lib.figures import lab as lab_figs
from course_lib.tokens.vocab import LAB_END_ID, LAB_VOCAB
from course_lib.toys import derive_lab as lab_derivation
from course_lib.toys import lab as lab_toy
from course_lib.toys.lab import LAB, LAB_CONFIG, LAB_PROMPT_IDS, LAB_SENTENCE_IDS, article_position, lab_id

# lab.* figures computed without the lab model (temperature on [2, 1, 0], detokenising, UTF-8 streaming)
OTHERS = {"lab.temp_210", "lab.detok", "lab.partial_utf8"}


@pytest.fixture(scope="module")
def model():
    torch.set_num_threads(1)
    return LAB.load()


def test_every_offline_lab_figure_has_a_helper():
    offline = {fid for fid, entry in load_registry().items()
               if fid.startswith("lab.") and not entry["needs_pretrained_weights"]}
    for fid in offline:                               # one computer each, in course_lib.figures.lab
        assert load_registry()[fid]["computer"] == f"course_lib.figures.lab:{fid.split('.', 1)[1]}"
        takes_model = "model" in inspect.signature(computer(fid)).parameters
        assert takes_model == (fid not in OTHERS), fid


def test_embedding_figures(model):
    check_figure("lab.x6", **lab_figs.x6(model))


def test_attention_figures(model):
    check_figure("lab.q6", **lab_figs.q6(model))
    check_figure("lab.heads", **lab_figs.heads(model))


def test_row5_sampling_figures(model):
    check_figure("lab.greedy", **lab_figs.greedy(model))
    check_figure("lab.top_k", **lab_figs.top_k(model))
    check_figure("lab.top_p", **lab_figs.top_p(model))
    check_figure("lab.t07_top_p", **lab_figs.t07_top_p(model))


def test_append_and_next_rows_figures(model):
    check_figure("lab.append", **lab_figs.append(model))
    check_figure("lab.next_after_roof", **lab_figs.next_after_roof(model))
    check_figure("lab.eot", **lab_figs.eot(model))
    check_figure("lab.kv_size", **lab_figs.kv_size(model))


def test_model_shape_and_mode(model):
    assert model.config == LAB_CONFIG
    assert not model.training
    assert all(p.dtype == torch.float64 for p in model.parameters())   # see course_lib.figures.margins
    assert LAB_CONFIG.head_dim == 2 and LAB_CONFIG.n_head == 2


def test_weight_file_is_readable():
    """Multiples of 0.5 everywhere except the 12 output biases, written with 3 decimals."""
    tables = LAB.read_weights()["tables"]
    for name, rows in tables.items():
        if name == "lm_head.bias":
            continue
        values = torch.tensor(rows, dtype=torch.float64).flatten()
        assert torch.equal(values * 2, torch.round(values * 2)), name
    text = LAB.weights_path.read_text(encoding="utf-8")
    bias_line = next(line for line in text.splitlines() if re.match(r'\s*"lm_head.bias": \[', line))
    numbers = re.findall(r"-?\d+\.\d+", bias_line)
    assert len(numbers) == 12 and all(re.fullmatch(r"-?\d+\.\d{3}", n) for n in numbers)


def test_weight_file_is_what_the_derivation_writes():
    """The file's text is weight_file_text of its own tables (layout, notes, config in step)."""
    tables = LAB.read_weights()["tables"]
    assert LAB.weights_path.read_text(encoding="utf-8") == lab_derivation.weight_file_text(tables)


def test_hand_set_tables_match_the_file():
    """Everything except the searched rows and the solved biases is the documented hand-set choice."""
    tables = LAB.read_weights()["tables"]
    prompt_rows = {p: tables["token_embedding.weight"][lab_id(p)] for p in lab_derivation.SEARCHED}
    rebuilt = lab_derivation.hand_set_tables(prompt_rows, tables["lm_head.bias"])
    assert rebuilt == tables


def test_shipped_prompt_rows_are_a_grid_search_result():
    tables = LAB.read_weights()["tables"]
    shipped = {p: tables["token_embedding.weight"][lab_id(p)] for p in lab_derivation.SEARCHED}
    found = [c["rows"] for c in lab_derivation.search_prompt_embeddings()]
    assert shipped in found


def test_a_changed_bias_breaks_the_figures(model):
    """The checks can fail: moving ␣roof's bias by 0.01 changes row 5's printed numbers."""
    tables = LAB.read_weights()["tables"]
    tables["lm_head.bias"][lab_id("␣roof")] += 0.01
    changed = LAB.from_tables(tables)
    with pytest.raises(FigureMismatch):
        check_figure("lab.top_p", **lab_figs.top_p(changed))


def test_greedy_generation_writes_the_sentence_and_stops(model):
    gen = lab_toy.greedy_generation(model)
    assert gen.ids == LAB_SENTENCE_IDS + [LAB_END_ID]
    assert gen.stopped_by == "end id"
    assert LAB_VOCAB.decode(gen.ids) == "the cat climbed the roof."


def test_cache_gives_the_same_rows_as_a_full_run(model):
    """One new row through the KV cache equals the last row of re-running all six tokens."""
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.tensor([LAB_PROMPT_IDS]), cache=cache)
        cached = model(torch.tensor([[lab_id("␣roof")]]), cache=cache)[0, -1]
    full = LAB.last_row_logits(model, LAB_PROMPT_IDS + [lab_id("␣roof")])
    torch.testing.assert_close(cached, full, rtol=0, atol=1e-6)
    assert len(cache) == 6


def test_generation_with_and_without_cache_agree(model):
    a = generate(model, LAB_PROMPT_IDS, 8, end_id=LAB_END_ID, use_cache=True)
    b = generate(model, LAB_PROMPT_IDS, 8, end_id=LAB_END_ID, use_cache=False)
    assert a.ids == b.ids


def test_sofa_path_ends_the_sentence(model):
    """u = 0.8 picks ␣sofa; the rows after it are those after ␣roof (shared embedding)."""
    assert lab_figs.t07_top_p(model)["u_08"] == " sofa"
    after_sofa = LAB.last_row_logits(model, LAB_PROMPT_IDS + [lab_id("␣sofa")])
    after_roof = LAB.last_row_logits(model, LAB_PROMPT_IDS + [lab_id("␣roof")])
    assert torch.equal(after_sofa, after_roof)


def test_article_positions_count_from_one():
    assert article_position(lab_toy.NEW_ROW) == 6


def test_loader_rejects_wrong_tables():
    tables = LAB.read_weights()["tables"]
    del tables["lm_head.bias"]
    with pytest.raises(ValueError, match="lm_head.bias"):
        LAB.from_tables(tables)


def test_ranked_table_walks_the_same_sums_as_top_p(model):
    probs = lab_toy.next_token_probs(model)
    table = lab_toy.ranked_table(probs)
    assert [row[0] for row in table] == sorted(range(12), key=lambda i: (-probs[i], i))
    sums = lab_figs.top_p(model)["running_sums"]
    assert [row[3] for row in table[:len(sums)]] == sums
    assert abs(table[-1][3] - 1.0) < 1e-6
