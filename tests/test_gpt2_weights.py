"""The figures that need pretrained GPT-2 small, checked against the registry.

Run them where the weights are:

    COURSE_GPT2_WEIGHTS=/path/to/model.safetensors pytest -m gpt2_weights

Without ``COURSE_GPT2_WEIGHTS`` every test here is reported as SKIPPED (never as passed): these
figures are then *not* verified on this machine. (The Hugging Face cache is deliberately not
searched here, so that a test run says exactly which file it checked.)
"""
import os

import pytest
import torch

from course_lib.figures import check_figure
from course_lib.data import sha256_of
from course_lib.figures import compute
from course_lib.gpt2 import WEIGHTS_ENV, WEIGHTS_SHA256, load_gpt2
from course_lib.tokens.bpe import gpt2_encoding

pytestmark = pytest.mark.gpt2_weights


@pytest.fixture(scope="module")
def weights_file():
    path = os.environ.get(WEIGHTS_ENV)
    if not path:
        pytest.skip(f"real GPT-2 not checked: set {WEIGHTS_ENV}=/path/to/model.safetensors")
    return path


@pytest.fixture(scope="module")
def gpt2(weights_file):
    torch.set_num_threads(1)
    return load_gpt2(weights_file)


@pytest.fixture(scope="module")
def enc():
    return gpt2_encoding()


def test_the_file_is_the_official_checkpoint(weights_file):
    assert sha256_of(weights_file) == WEIGHTS_SHA256


def test_real_weights_give_transformers_logits(gpt2, weights_file, enc):
    import transformers
    from safetensors.torch import load_file

    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config()).eval()
    hf.transformer.load_state_dict(load_file(weights_file), strict=False)
    hf.tie_weights()
    ids = torch.tensor([enc.encode("The meaning of life is")])
    with torch.no_grad():
        torch.testing.assert_close(gpt2(ids), hf(ids).logits, rtol=1e-4, atol=1e-3)


def test_logits_shape(gpt2, enc):
    check_figure("gpt2.logits_shape", **compute("gpt2.logits_shape", gpt2, enc))


def test_top5(gpt2, enc):
    check_figure("gpt2.top5", **compute("gpt2.top5", gpt2, enc))


def test_greedy(gpt2, enc):
    check_figure("gpt2.greedy", **compute("gpt2.greedy", gpt2, enc))


def test_loop30(gpt2, enc):
    check_figure("gpt2.loop30", **compute("gpt2.loop30", gpt2, enc))


def test_top_p_after_two_prompts(gpt2, enc):
    check_figure("lab.gpt2_top_p", **compute("lab.gpt2_top_p", gpt2, enc))


def test_temperature_2_is_noise(gpt2, enc):
    check_figure("lab.gpt2_t2", **compute("lab.gpt2_t2", gpt2, enc))
