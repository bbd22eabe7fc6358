"""GPT-2's sizes come from sources independent of the registry: the tokenizer's files and
Hugging Face's GPT-2 configuration (interface.gpt2.sizes, lab.kv_size, interface.tying)."""
import pytest

from course_lib.figures import expected
from course_lib.gpt2 import GPT2_SMALL_CONFIG
from course_lib.tokens.bpe import gpt2_encoding


def test_vocabulary_size_comes_from_the_tokenizer_files():
    assert gpt2_encoding().n_vocab == expected("interface.gpt2.sizes", "vocab_size")
    assert GPT2_SMALL_CONFIG.vocab_size == gpt2_encoding().n_vocab


def test_gpt2_small_configuration_matches_hugging_faces():
    transformers = pytest.importorskip("transformers")
    reference = transformers.GPT2Config()          # GPT-2 small's published shape
    ours = GPT2_SMALL_CONFIG
    assert (ours.vocab_size, ours.n_positions, ours.n_embd, ours.n_layer, ours.n_head) == (
        reference.vocab_size, reference.n_positions, reference.n_embd, reference.n_layer, reference.n_head)
    assert ours.layer_norm_eps == reference.layer_norm_epsilon
    assert ours.n_embd == expected("interface.gpt2.sizes", "width")
