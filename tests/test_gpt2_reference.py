"""course_lib's GPT against transformers' GPT2LMHeadModel, wider than test_gpt2.py.

Several configurations (non-default ``layer_norm_epsilon``, every ``activation_function`` the
course's model has, 3–4 blocks, one with the full 1,024-row position table), batches of
several rows, KV-cache appends of several ids per call, 20 greedy steps through the course's
own generation loop (``course_lib.decoding.generate``) and a float16 checkpoint. Everything is
built from random weights in a temporary folder: nothing is downloaded.

The last tests plant two model bugs (``layer_norm_epsilon`` ignored; no causal
mask when several ids are appended to the cache in one call) and require the comparison to
fail — the tests of test_gpt2.py alone let both through.
"""
import copy
import math
import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")      # transformers must never reach the network here
import transformers  # noqa: E402  test dependency (pinned in pyproject's "test" extra)
from _hf import random_hf_gpt2  # noqa: E402
from safetensors import safe_open  # noqa: E402

from course_lib.model import gpt as M  # noqa: E402
from course_lib.decoding.generate import generate  # noqa: E402
from course_lib.gpt2 import HF_ACTIVATIONS, load_gpt2  # noqa: E402

CONFIGS = {
    # the full 1,024-row position table, a large epsilon, GPT-2's own activation
    "eps1e-2-gelu_new-1024pos": dict(n_layer=3, n_embd=48, n_head=4, vocab_size=97, n_positions=1024,
                                     layer_norm_epsilon=1e-2, activation_function="gelu_new"),
    "eps1e-3-exact-gelu": dict(n_layer=4, n_embd=32, n_head=2, vocab_size=89, n_positions=64,
                               layer_norm_epsilon=1e-3, activation_function="gelu"),
    "eps5e-2-relu": dict(n_layer=3, n_embd=40, n_head=5, vocab_size=83, n_positions=48,
                         layer_norm_epsilon=5e-2, activation_function="relu"),
    "gelu_pytorch_tanh": dict(n_layer=3, n_embd=32, n_head=4, vocab_size=71, n_positions=40,
                              layer_norm_epsilon=1e-5, activation_function="gelu_pytorch_tanh"),
}
BATCH = 3


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def pair(request, tmp_path_factory):
    """(transformers model, the course's model loaded from its save_pretrained folder, name)."""
    torch.set_num_threads(1)
    name = request.param
    hf = random_hf_gpt2(CONFIGS[name], seed=sorted(CONFIGS).index(name))
    folder = tmp_path_factory.mktemp(f"gpt2_{name}")
    hf.save_pretrained(folder)
    return hf, load_gpt2(folder), name


def batch_ids(vocab_size: int, length: int, seed: int = 3, batch: int = BATCH) -> torch.Tensor:
    return torch.randint(0, vocab_size, (batch, length), generator=torch.Generator().manual_seed(seed))


def assert_same_logits(ours: torch.Tensor, theirs: torch.Tensor):
    torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-4)


def chunked_logits(model, ids: torch.Tensor, sizes) -> torch.Tensor:
    """Logits (B, T, V) computed through one KV cache, appending ``sizes[0]`` ids, then
    ``sizes[1]``, …: the causal mask must hold *inside* every appended block."""
    cache = model.new_cache()
    rows, start = [], 0
    for size in sizes:
        rows.append(model(ids[:, start:start + size], cache=cache))
        start += size
        assert len(cache) == start
    assert start == ids.shape[1]
    return torch.cat(rows, dim=1)


def chunk_sizes(total: int, seed: int = 4, largest: int = 7) -> list[int]:
    """Random block sizes 1..largest (mostly > 1) that add up to ``total``."""
    rng = torch.Generator().manual_seed(seed)
    sizes = []
    while sum(sizes) < total:
        sizes.append(min(int(torch.randint(1, largest + 1, (1,), generator=rng)), total - sum(sizes)))
    return sizes


@pytest.fixture(scope="module")
def eps_pair(tmp_path_factory):
    name = "eps1e-2-gelu_new-1024pos"
    hf = random_hf_gpt2(CONFIGS[name], seed=sorted(CONFIGS).index(name))
    folder = tmp_path_factory.mktemp("gpt2_eps")
    hf.save_pretrained(folder)
    return hf, load_gpt2(folder)


def test_config_json_is_read_with_epsilon_and_activation(pair):
    hf, ours, name = pair
    c = CONFIGS[name]
    assert ours.config.layer_norm_eps == c["layer_norm_epsilon"]
    assert ours.config.activation == HF_ACTIVATIONS[c["activation_function"]]
    assert all(m.eps == c["layer_norm_epsilon"] for m in ours.modules() if isinstance(m, torch.nn.LayerNorm))
    assert (ours.config.n_layer, ours.config.n_positions) == (c["n_layer"], c["n_positions"])
    assert ours.num_parameters() == hf.num_parameters()


def test_logits_equal_transformers_on_a_batch_filling_the_position_table(pair):
    hf, ours, _ = pair
    ids = batch_ids(ours.config.vocab_size, ours.config.n_positions)     # every position row used
    with torch.no_grad():
        assert_same_logits(ours(ids), hf(ids).logits)
    with pytest.raises(ValueError, match="longer than the position table"):
        ours(batch_ids(ours.config.vocab_size, ours.config.n_positions + 1))


def test_kv_cache_appends_of_several_ids_equal_transformers(pair):
    hf, ours, _ = pair
    length = min(ours.config.n_positions, 96)
    ids = batch_ids(ours.config.vocab_size, length, seed=5)
    sizes = chunk_sizes(length)
    assert sum(s > 1 for s in sizes[1:]) >= 3                           # real multi-id appends
    with torch.no_grad():
        assert_same_logits(chunked_logits(ours, ids, sizes), hf(ids).logits)


def test_kv_cache_appends_up_to_the_last_position_row(eps_pair):
    """The 1,024-row table: a 1,000-id prompt, then blocks of several ids to the very end."""
    hf, ours = eps_pair
    ids = batch_ids(97, 1024, seed=6, batch=2)
    with torch.no_grad():
        theirs = hf(ids).logits[:, 1000:]
        ours_rows = chunked_logits(ours, ids, [1000, 5, 1, 9, 3, 6])[:, 1000:]
    assert_same_logits(ours_rows, theirs)


@pytest.mark.parametrize("use_cache", [True, False])
def test_twenty_greedy_steps_through_the_course_loop_equal_transformers(pair, use_cache):
    hf, ours, _ = pair
    prompt = batch_ids(ours.config.vocab_size, 5, seed=7, batch=1)
    steps = 20
    with torch.no_grad():
        theirs = hf.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=steps,
                             min_new_tokens=steps, do_sample=False, pad_token_id=0)
    run = generate(ours, prompt[0].tolist(), steps, use_cache=use_cache, record_logits=True)
    assert run.ids == theirs[0].tolist() and run.stopped_by == "length"
    # no step is a near-tie that a float32 rounding difference (~1e-6 here) could decide
    assert min(sorted(s.logits)[-1] - sorted(s.logits)[-2] for s in run.steps) > 1e-5


def test_float16_checkpoint_loads_as_float32_and_equals_transformers(tmp_path):
    c = CONFIGS["eps1e-3-exact-gelu"]
    hf = random_hf_gpt2(c, seed=11).half()
    hf.save_pretrained(tmp_path)                                  # a float16 model.safetensors
    with safe_open(str(tmp_path / "model.safetensors"), "pt") as f:
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.float16}
    ours = load_gpt2(tmp_path)
    assert {p.dtype for p in ours.parameters()} == {torch.float32}
    hf = hf.float()                                               # the float16 values, in float32
    assert torch.equal(ours.token_embedding.weight, hf.transformer.wte.weight)
    ids = batch_ids(c["vocab_size"], 30, seed=12)
    with torch.no_grad():
        assert_same_logits(ours(ids), hf(ids).logits)
        assert_same_logits(chunked_logits(ours, ids, [7, 4, 1, 8, 10]), hf(ids).logits)


# ------------------------------------------------------------------ planted bugs must be caught

def differs(ours_logits, theirs_logits) -> bool:
    try:
        assert_same_logits(ours_logits, theirs_logits)
    except AssertionError:
        return True
    return False


def test_ignoring_layer_norm_epsilon_is_caught(eps_pair):
    """Planted bug: every LayerNorm uses the default 1e-5 instead of the config's epsilon."""
    hf, ours = eps_pair
    broken = copy.deepcopy(ours)
    for m in broken.modules():
        if isinstance(m, torch.nn.LayerNorm):
            m.eps = 1e-5
    ids = batch_ids(97, 40)
    with torch.no_grad():
        assert not differs(ours(ids), hf(ids).logits)
        assert differs(broken(ids), hf(ids).logits)


def attention_without_mask_in_appended_blocks(self, x, cache=None, layer=0, trace=None, last_only=False):
    """CausalSelfAttention.forward with a planted bug: the causal mask is applied to the prompt
    and to one-id steps, but forgotten when several ids are appended to a filled cache."""
    B, T, D = x.shape
    past = len(cache) if cache is not None else 0
    q, k, v = (self.split_heads(lin(x)) for lin in (self.query, self.key, self.value))
    if cache is not None:
        k, v = cache.append(layer, k, v)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
    if past == 0:
        future = torch.ones(T, T, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    heads = torch.softmax(scores, dim=-1) @ v
    return self.output(heads.transpose(1, 2).contiguous().view(B, T, D))


def test_no_causal_mask_in_multi_id_appends_is_caught(eps_pair, monkeypatch):
    hf, ours = eps_pair
    ids = batch_ids(97, 40, seed=8)
    with torch.no_grad():
        theirs = hf(ids).logits
        monkeypatch.setattr(M.CausalSelfAttention, "forward", attention_without_mask_in_appended_blocks)
        # what test_gpt2.py checks (a full forward, then one id per call) cannot see the bug ...
        assert not differs(ours(ids), theirs)
        assert not differs(chunked_logits(ours, ids, [3] + [1] * 37), theirs)
        # ... appending several ids per call can
        assert differs(chunked_logits(ours, ids, [3, 5, 2, 6, 4, 20]), theirs)
