"""course_lib's GPT-2 against Hugging Face transformers, without downloading anything.

transformers builds GPT2LMHeadModel with random weights (full GPT-2 small size and a small
configuration), saves them in Hugging Face's safetensors layout, and course_lib loads that
file through ``load_gpt2``, the loader learners use for the real checkpoint. Equal logits (with
and without our KV cache) and equal greedy continuations show that the architecture and the
name/transpose mapping are right; only the trained numbers are missing.
"""
import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")      # transformers must never reach the network here
import transformers  # noqa: E402  test dependency (pinned in pyproject's "test" extra)
from _hf import random_hf_gpt2  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from course_lib.figures import expected
from course_lib.gpt2 import (GPT2_SMALL_CONFIG, gpt2_config, hf_to_course_state_dict,
                             load_gpt2)
from course_lib.decoding import generate

SMALL = dict(n_layer=2, n_embd=64, n_head=4, vocab_size=101, n_positions=32)
FULL = dict(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024)


def save_hf(model, folder):
    """Save as transformers does (``transformer.`` prefixes, config.json beside the file)."""
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def full_pair(tmp_path_factory):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)                    # this module's full-size comparisons: one thread
    try:
        hf = random_hf_gpt2(FULL, seed=0)
        folder = save_hf(hf, tmp_path_factory.mktemp("gpt2_full"))
        yield hf, load_gpt2(folder / "model.safetensors")
    finally:
        torch.set_num_threads(threads)          # the tests after this module keep their threads


@pytest.fixture(scope="module")
def small_pair(tmp_path_factory):
    hf = random_hf_gpt2(SMALL, seed=1)
    folder = save_hf(hf, tmp_path_factory.mktemp("gpt2_small"))
    return hf, load_gpt2(folder)


def prompt_ids(vocab_size: int, length: int = 7, seed: int = 2) -> torch.Tensor:
    return torch.randint(0, vocab_size, (1, length), generator=torch.Generator().manual_seed(seed))


def cached_logits(model, ids: torch.Tensor, first: int) -> torch.Tensor:
    """Logits (1, T, V) computed with our KV cache: ``first`` positions at once, then one by one."""
    cache = model.new_cache()
    rows = [model(ids[:, :first], cache=cache)]
    for t in range(first, ids.shape[1]):
        rows.append(model(ids[:, t:t + 1], cache=cache))
    return torch.cat(rows, dim=1)


def assert_same_logits(ours: torch.Tensor, theirs: torch.Tensor):
    # float32 through 12 blocks: agree to ~1e-5 relative to logits of size ~10
    torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-4)


def test_gpt2_small_config_is_gpt2_small():
    c = GPT2_SMALL_CONFIG
    assert (c.n_layer, c.n_embd, c.n_head, c.vocab_size, c.n_positions) == (12, 768, 12, 50257, 1024)
    assert (c.mlp_hidden, c.activation, c.layer_norm_eps) == (3072, "gelu_tanh", 1e-5)
    assert c.tie_weights and c.bias and not c.head_bias


@pytest.mark.parametrize("pair", ["small_pair", "full_pair"])
def test_same_parameter_count_as_transformers(pair, request):
    hf, ours = request.getfixturevalue(pair)
    assert ours.num_parameters() == hf.num_parameters()          # 124,439,808 at full size
    assert ours.lm_head.weight is ours.token_embedding.weight     # one table, two roles


@pytest.mark.parametrize("pair", ["small_pair", "full_pair"])
def test_logits_equal_transformers(pair, request):
    hf, ours = request.getfixturevalue(pair)
    ids = prompt_ids(ours.config.vocab_size)
    with torch.no_grad():
        theirs = hf(ids).logits                                     # (1, 7, V)
        assert_same_logits(ours(ids), theirs)
        assert_same_logits(cached_logits(ours, ids, first=3), theirs)


@pytest.mark.parametrize("pair", ["small_pair", "full_pair"])
def test_greedy_continuation_equals_transformers(pair, request):
    hf, ours = request.getfixturevalue(pair)
    ids = prompt_ids(ours.config.vocab_size, length=4)
    steps = 8
    with torch.no_grad():
        theirs = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=steps,
                             min_new_tokens=steps, do_sample=False, pad_token_id=0)
    assert theirs.shape == (1, 4 + steps)
    # the course's one generation loop, rerunning everything and with the KV cache
    assert generate(ours, ids, steps, use_cache=False).ids == theirs[0].tolist()
    assert generate(ours, ids, steps, use_cache=True).ids == theirs[0].tolist()


def test_official_file_layout_loads_the_same(small_pair, tmp_path):
    """The hub's model.safetensors has no ``transformer.`` prefix and keeps the attention mask
    buffers (``h.i.attn.bias``); without a config.json the configuration is passed in."""
    hf, ours = small_pair
    tensors = {k.removeprefix("transformer."): v.contiguous() for k, v in hf.state_dict().items()
               if k != "lm_head.weight"}
    for i in range(SMALL["n_layer"]):
        tensors[f"h.{i}.attn.bias"] = torch.tril(torch.ones(1, 1, 32, 32))
    save_file(tensors, str(tmp_path / "model.safetensors"))
    loaded = load_gpt2(tmp_path / "model.safetensors", config=gpt2_config(**SMALL))
    ids = prompt_ids(SMALL["vocab_size"])
    with torch.no_grad():
        assert torch.equal(loaded(ids), ours(ids))


def test_a_wrong_mapping_is_caught(small_pair):
    """The comparison can fail: exchanging query and key of one block changes the logits."""
    hf, ours = small_pair
    state = {k: v.clone() for k, v in ours.state_dict().items()}
    state["blocks.1.attn.query.weight"], state["blocks.1.attn.key.weight"] = (
        state["blocks.1.attn.key.weight"], state["blocks.1.attn.query.weight"])
    broken = type(ours)(ours.config)
    broken.load_state_dict(state)
    ids = prompt_ids(SMALL["vocab_size"])
    with torch.no_grad():
        assert (broken(ids) - hf(ids).logits).abs().max() > 1e-2


def test_kv_cache_per_token_is_the_lab_figure(full_pair):
    _, ours = full_pair
    cache = ours.new_cache()
    with torch.no_grad():
        ours(prompt_ids(ours.config.vocab_size, length=2), cache=cache)
    assert cache.numbers_per_token() == expected("lab.kv_size", "gpt2_small")   # 2 × 12 × 768


def test_mapping_rejects_wrong_shapes_and_missing_tensors(small_pair):
    hf, _ = small_pair
    state = dict(hf.state_dict())
    bad = dict(state, **{"transformer.h.0.mlp.c_fc.weight": state["transformer.h.0.mlp.c_fc.weight"].t()})
    with pytest.raises(ValueError, match=r"h\.0\.mlp\.c_fc\.weight has shape \(256, 64\)"):
        hf_to_course_state_dict(bad, gpt2_config(**SMALL))
    missing = {k: v for k, v in state.items() if k != "transformer.ln_f.bias"}
    with pytest.raises(KeyError, match="ln_f.bias"):
        hf_to_course_state_dict(missing, gpt2_config(**SMALL))
    with pytest.raises(ValueError, match="unexpected tensors"):
        hf_to_course_state_dict(state, gpt2_config(**dict(SMALL, n_layer=1)))


def test_logits_shape_figure_with_gpt2_architecture(full_pair):
    """gpt2.logits_shape needs only the architecture: random weights give the article's shapes."""
    from course_lib.figures import check_figure
    from course_lib.figures.gpt2 import logits_shape
    from course_lib.tokens.bpe import gpt2_encoding

    _, ours = full_pair
    check_figure("gpt2.logits_shape", **logits_shape(ours, gpt2_encoding()))


def test_random_gpt2_is_seeded_without_reseeding_the_callers_generator():
    """random_gpt2 draws from a forked generator: same weights for a seed, the caller's global
    stream untouched (a checker or notebook cell that calls it is not reseeded)."""
    from course_lib.gpt2 import random_gpt2
    config = gpt2_config(n_layer=1, n_embd=8, n_head=2, vocab_size=11, n_positions=5)
    torch.manual_seed(1234)
    before = torch.get_rng_state()
    first = random_gpt2(config, seed=5)
    assert torch.equal(torch.get_rng_state(), before)
    second = random_gpt2(config, seed=5)
    other = random_gpt2(config, seed=6)
    w = "token_embedding.weight"
    assert torch.equal(first.state_dict()[w], second.state_dict()[w])
    assert not torch.equal(first.state_dict()[w], other.state_dict()[w])
    assert torch.equal(torch.get_rng_state(), before)


def test_shapes_only_gpt2_has_gpt2_small_shapes_and_no_numbers():
    """notebook 05's GPT-2 small on the meta device: the parameter count and every shape of a
    forward pass as a real one gives (gpt2.logits_shape), and no memory for its 124M weights."""
    from course_lib.figures import check_figure
    from course_lib.figures.gpt2 import logits_shape
    from course_lib.gpt2 import GPT2_SMALL_CONFIG, random_gpt2, shapes_only_gpt2
    from course_lib.tokens.bpe import gpt2_encoding

    meta = shapes_only_gpt2(GPT2_SMALL_CONFIG)
    assert {p.device.type for p in meta.parameters()} == {"meta"}
    assert meta.num_parameters() == 124_439_808
    check_figure("gpt2.logits_shape", **logits_shape(meta, gpt2_encoding()))
    small = gpt2_config(n_layer=2, n_embd=8, n_head=2, vocab_size=11, n_positions=5)
    real, shapes = random_gpt2(small), shapes_only_gpt2(small)
    assert ({k: v.shape for k, v in shapes.state_dict().items()} == {k: v.shape for k, v in real.state_dict().items()})
    ids = torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        assert shapes(ids).shape == real(ids).shape == (1, 3, 11)
