"""The generation loop: the KV cache gives the same logits, appending leaves old rows alone, stops."""
import pytest
import torch

from course_lib.toys.five_token import FIVE_TOKEN, INPUT_IDS
from course_lib.decoding.generate import RuleChoice, generate, greedy_choice
from course_lib.decoding.kv_cost import kv_numbers_per_token
from course_lib.model import GPT, GPTConfig
from course_lib.decoding import SamplingRule
from course_lib.tokens.vocab import LAB_PIECES


@pytest.fixture(scope="module")
def five():
    return FIVE_TOKEN.load()


@pytest.fixture(scope="module")
def deep():
    """A random 2-layer, 2-head model: the cache must work across layers, not only in the toys."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=12, n_positions=16, n_embd=8, n_head=2, n_layer=2, mlp_hidden=32))
    return model.eval()


@pytest.mark.parametrize("name", ["five", "deep"])
def test_cached_and_uncached_logits_agree_at_every_step(name, request):
    model = request.getfixturevalue(name)
    ids = [0, 1, 0]
    cache = model.new_cache()
    with torch.no_grad():
        cached = model(torch.tensor([ids]), cache=cache)[0, -1]
        for new_id in [1, 4, 2, 3]:
            full = model(torch.tensor([ids]))[0, -1]            # the whole sequence again
            assert torch.allclose(cached, full, atol=1e-6, rtol=0)
            ids.append(new_id)
            cached = model(torch.tensor([[new_id]]), cache=cache)[0, -1]   # one new row
            assert len(cache) == len(ids)
        assert torch.allclose(cached, model(torch.tensor([ids]))[0, -1], atol=1e-6, rtol=0)


@pytest.mark.parametrize("name", ["five", "deep"])
def test_appending_a_token_leaves_earlier_rows_unchanged(name, request):
    model = request.getfixturevalue(name)
    with torch.no_grad():
        before = model(torch.tensor([[0, 1, 0, 2]]))[0]                 # (4, V)
        after = model(torch.tensor([[0, 1, 0, 2, 3]]))[0]               # (5, V)
        changed = model(torch.tensor([[0, 1, 0, 2, 1]]))[0]
    assert torch.allclose(after[:4], before, atol=1e-6, rtol=0)
    assert torch.allclose(changed[:4], before, atol=1e-6, rtol=0)
    assert not torch.allclose(after[4], changed[4])                      # the new row did change


def test_greedy_generation_with_and_without_cache(deep):
    a = generate(deep, [0, 1, 0], max_new_tokens=10, record_logits=True)
    b = generate(deep, [0, 1, 0], max_new_tokens=10, use_cache=False, record_logits=True)
    assert a.ids == b.ids and len(a.new_ids) == 10 and a.stopped_by == "length"
    for step_a, step_b in zip(a.steps, b.steps):
        assert step_a.logits == pytest.approx(step_b.logits, abs=1e-6)
    # each step's id is the argmax of the row it read, and that row is the model's last row
    for n, step in enumerate(a.steps):
        assert step.token_id == max(range(12), key=lambda i: (step.logits[i], -i))
        with torch.no_grad():
            row = deep(torch.tensor([a.ids[:3 + n]]))[0, -1].tolist()
        assert step.logits == pytest.approx(row, abs=1e-6)


def test_generation_stops_at_the_end_id(deep):
    first = generate(deep, [0, 1, 0], max_new_tokens=6).new_ids
    stop = first[2]
    out = generate(deep, [0, 1, 0], max_new_tokens=6, end_id=stop)
    assert out.new_ids == first[:first.index(stop) + 1] and out.stopped_by == "end id"


def test_sampled_generation_is_reproducible_and_uses_the_rule(five):
    rule = SamplingRule(temperature=1.0, top_k=2)
    a = generate(five, INPUT_IDS, 5, choose=RuleChoice(rule, torch.Generator().manual_seed(3)), record_logits=True)
    b = generate(five, INPUT_IDS, 5, choose=RuleChoice(rule, torch.Generator().manual_seed(3)))
    assert a.ids == b.ids and len(a.ids) == 8
    for step in a.steps:
        assert step.token_id in rule.apply(step.logits).kept
        assert step.token_id == rule.choose(step.logits, step.u)
    fixed = generate(five, INPUT_IDS, 2, choose=RuleChoice(rule, us=[0.0, 0.999]), record_logits=True)
    assert [s.u for s in fixed.steps] == [0.0, 0.999]
    first = rule.apply(fixed.steps[0].logits)
    assert fixed.new_ids[0] == min(first.kept)        # u = 0 lands in the first kept interval


def test_streaming_decoder_receives_every_new_id_but_the_end(deep):
    class Recorder:
        def __init__(self):
            self.seen = []

        def push(self, token_id):
            self.seen.append(token_id)
            return LAB_PIECES[token_id]

    greedy = generate(deep, [0], max_new_tokens=5).new_ids
    rec = Recorder()
    printed = []
    out = generate(deep, [0], max_new_tokens=5, end_id=greedy[-1], decoder=rec, on_step=printed.append)
    assert rec.seen == out.new_ids[:-1] and out.new_ids[-1] == greedy[-1]
    assert out.text == "".join(LAB_PIECES[i] for i in out.new_ids[:-1])
    assert [s.token_id for s in printed] == out.new_ids


def test_kv_numbers_per_token_matches_the_cache(deep):
    cache = deep.new_cache()
    with torch.no_grad():
        deep(torch.tensor([[1, 2, 3]]), cache=cache)
    assert cache.numbers_per_token() == kv_numbers_per_token(deep.config) == 2 * 2 * 8


def test_bad_arguments(five):
    with pytest.raises(ValueError, match="^max_new_tokens"):
        generate(five, INPUT_IDS, 6)                 # 3 + 6 > 8 position rows
    with pytest.raises(ValueError, match="^max_new_tokens"):
        generate(five, INPUT_IDS, 0)
    with pytest.raises(ValueError, match="^prompt_ids"):
        generate(five, [], 2)
    with pytest.raises(ValueError, match="^generator or us"):
        RuleChoice(SamplingRule())
    with pytest.raises(ValueError, match="^us"):
        generate(five, INPUT_IDS, 3, choose=RuleChoice(SamplingRule(), us=[0.5]))


def test_greedy_choice_returns_no_u():
    assert greedy_choice(torch.tensor([0.0, 2.0, 2.0]), 0) == (1, None)


def test_streaming_through_the_gpt2_decoder_holds_half_characters():
    from course_lib.tokens.streaming import StreamingDecoder

    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=50_257, n_positions=8, n_embd=8, n_head=2, mlp_hidden=16)).eval()
    script = [17250, 220, 19526, 254, 0]          # "Hi 你!": 你's bytes are split over 19526 and 254

    def scripted(logits, step):
        return script[step], None

    out = generate(model, [464], 5, choose=scripted, decoder=StreamingDecoder())
    assert [s.text for s in out.steps] == ["Hi", " ", "", "你", "!"]
    assert out.text == "Hi 你!"


def test_logits_are_recorded_only_when_asked(deep):
    """GPT-2-sized rows are not copied into Python lists unless asked (50,257 floats a step)."""
    plain = generate(deep, [0, 1, 0], max_new_tokens=3)
    assert all(step.logits is None for step in plain.steps)
    recorded = generate(deep, [0, 1, 0], max_new_tokens=3, record_logits=True)
    assert plain.ids == recorded.ids and all(len(step.logits) == 12 for step in recorded.steps)


@pytest.mark.parametrize("name", ["five", "deep"])
def test_last_only_gives_the_last_row_of_the_full_forward(name, request):
    """model(ids, last_only=True): the output layer and the last block run on the last position only,
    with and without a cache; the row equals the full forward's last row (within rounding)."""
    model = request.getfixturevalue(name)
    ids = torch.tensor([[0, 1, 0, 2, 1], [3, 1, 1, 0, 4]])
    with torch.no_grad():
        full = model(ids)                                            # (2, 5, V)
        last = model(ids, last_only=True)                            # (2, 1, V)
        cache = model.new_cache()
        prompt_last = model(ids[:, :3], cache=cache, last_only=True)  # the cache still gets every row
        step = model(ids[:, 3:], cache=cache, last_only=True)
    assert last.shape == (2, 1, model.config.vocab_size)
    torch.testing.assert_close(last[:, 0], full[:, -1])
    torch.testing.assert_close(prompt_last[:, 0], full[:, 2])
    torch.testing.assert_close(step[:, 0], full[:, -1])
    assert len(cache) == 5


def test_the_cache_makes_room_once_and_grows_when_full(deep):
    """Room for ``length`` positions is made at the first call; beyond it the storage grows (and keeps
    the old rows); ``layers`` shows only the positions held."""
    ids = torch.tensor([[0, 1, 0, 2, 1, 3, 4, 5, 6, 7, 8]])
    with torch.no_grad():
        full = deep(ids)[0]
        for length in (None, 2, 11, 16):
            cache = deep.new_cache(length)
            rows = [deep(ids[:, :2], cache=cache)[0]]
            rooms = {cache.store[0][0].shape[2]}
            for t in range(2, ids.shape[1]):
                rows.append(deep(ids[:, t:t + 1], cache=cache)[0])
                rooms.add(cache.store[0][0].shape[2])
                assert [kv[0].shape[2] for kv in cache.layers] == [t + 1] * 2
            torch.testing.assert_close(torch.cat(rows), full)
            if length is not None and length >= ids.shape[1]:
                assert rooms == {length}                      # never re-allocated
            else:
                assert len(rooms) > 1 and max(rooms) >= ids.shape[1]
    k_all, _ = cache.layers[1]
    assert torch.equal(k_all, cache.store[1][0][:, :, :ids.shape[1]])


def test_why_a_generation_stopped_is_said_in_the_notebooks_language():
    from course_lib.decoding.generate import Generation
    from course_lib.ui.language import current_language, set_language
    before = current_language()
    try:
        said = {}
        for code in ("en", "zh"):
            set_language(code)
            said[code] = [Generation([1], [1], reason).why_stopped() for reason in ("end id", "length")]
    finally:
        set_language(before)
    assert said["en"] == ["end id", "length limit"]
    assert said["zh"] == ["选中了结束 id", "达到长度上限"]
