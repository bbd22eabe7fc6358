"""The small measurements behind the GPT-2 figures (no weights needed)."""
from course_lib.figures.gpt2 import longest_repeat, loop30_values, t2_values


def test_longest_repeat_finds_the_repeated_phrase():
    assert longest_repeat([5, 1, 2, 3, 9, 1, 2, 3, 7]) == [1, 2, 3]
    assert longest_repeat([4, 4, 4]) == [4, 4]          # overlapping runs count
    assert longest_repeat([1, 2, 3]) == []


def test_loop30_repeats_means_a_phrase_of_three_tokens_comes_back():
    assert loop30_values([1, 2, 3, 1, 2, 3]) == {"new_tokens": 6, "repeats": True}
    assert loop30_values([1, 2, 9, 1, 2, 8]) == {"new_tokens": 6, "repeats": False}


def test_t2_noise_is_the_share_of_draws_outside_the_top_50():
    calm = [0, 3, 1, 60, 0, 2, 0, 5, 0, 1]              # 1 of 10 outside the top 50
    wild = [60, 900, 3, 40000, 51, 7, 1200, 75, 0, 50]  # 7 of 10 outside (rank 50 is the 51st)
    assert t2_values(wild, calm) == {"t2_is_noise": True, "t07_is_not_noise": True}
    assert t2_values(calm, calm) == {"t2_is_noise": False, "t07_is_not_noise": True}
    assert t2_values(wild, wild)["t07_is_not_noise"] is False


def test_kv_cache_theory_counts_every_matrix_of_the_model():
    """Per position, the benchmark's count of weight multiply-adds is the number of entries of
    every Linear weight the forward pass multiplies by (attention, MLP and the output layer)."""
    import torch.nn as nn

    from course_lib.decoding.kv_cost import cached_step_cost, full_pass_cost, predicted_speedup
    from course_lib.gpt2 import gpt2_config
    from course_lib.model import GPT

    config = gpt2_config(n_layer=2, n_embd=16, n_head=2, vocab_size=50, n_positions=64)
    model = GPT(config)
    matrix_entries = sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear))
    attention = lambda L: config.n_layer * 2 * L * config.n_embd    # q·k and weights·v      # noqa: E731
    assert cached_step_cost(config, 10) == matrix_entries + attention(10)
    assert full_pass_cost(config, 10) == 10 * matrix_entries + 10 * attention(10)
    # one new token after a one-token prompt: both ways do one full pass, then one more row
    assert predicted_speedup(config, 1, 1) == 1.0
