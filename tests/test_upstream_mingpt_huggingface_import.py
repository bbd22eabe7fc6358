"""Ported: minGPT's "can we load Hugging Face's GPT-2" test, on course_lib's loader and model.

Upstream file: karpathy/minGPT, tests/test_huggingface_import.py at commit
803f38800d66ca2a34698e144163588bc5f31ef6 (``test_gpt2``): the same prompt, "Hello, my dog is a
little"; the logits of both models must match; then 20 argmax steps of each must give the same
ids and exactly the same decoded string.

Offline, with random weights: upstream downloads the trained ``gpt2`` checkpoint; here
transformers' ``GPT2LMHeadModel`` gets a random, seeded GPT-2-shaped configuration (GPT-2's
50,257-token vocabulary, so the prompt is GPT-2's own ids), is written with ``save_pretrained``
and read back by ``course_lib.gpt2.load_gpt2`` — the path a downloaded checkpoint takes. The
prompt is tokenized by Hugging Face's tokenizer from data/gpt2_tokenizer (upstream:
``GPT2Tokenizer``) and by the course's; the samples are decoded by both. Upstream's
``torch.allclose`` (rtol 1e-5, atol 1e-8) becomes ``assert_close`` at 1e-4: the two models add
in different orders, and with random weights the logits reach tens.
"""
import os
import shutil

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")      # transformers must never reach the network here
import transformers  # noqa: E402
from _hf import random_hf_gpt2  # noqa: E402

from course_lib.decoding.generate import generate  # noqa: E402
from course_lib.gpt2 import load_gpt2  # noqa: E402
from course_lib.tokens import bpe as T  # noqa: E402

SIZES = dict(n_layer=2, n_embd=32, n_head=4, vocab_size=50257, n_positions=64,
             layer_norm_epsilon=1e-5, activation_function="gelu_new")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    model_hf = random_hf_gpt2(SIZES, seed=5)
    folder = tmp_path_factory.mktemp("random_gpt2")
    model_hf.save_pretrained(folder)
    model = load_gpt2(folder)
    return model.eval(), model_hf.eval()


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hf_gpt2_tokenizer")
    shutil.copy(T.tokenizer_dir() / "encoder.json", folder / "vocab.json")
    shutil.copy(T.tokenizer_dir() / "vocab.bpe", folder / "merges.txt")
    tok = transformers.GPT2TokenizerFast.from_pretrained(folder)
    assert len(tok) == 50257
    return tok


def test_gpt2(models, tokenizer):
    model, model_hf = models
    prompt = "Hello, my dog is a little"
    model_hf.config.pad_token_id = model_hf.config.eos_token_id   # as upstream: no warning
    x = tokenizer(prompt, return_tensors="pt")["input_ids"]
    assert x[0].tolist() == T.teaching_tokenizer().encode(prompt)

    # ensure the logits match
    with torch.no_grad():
        logits1 = model(x)
        logits2 = model_hf(x).logits
    torch.testing.assert_close(logits1, logits2, rtol=1e-4, atol=1e-4)

    # now draw the argmax samples from each and compare them
    y1 = torch.tensor(generate(model, x, max_new_tokens=20).ids)
    out1 = tokenizer.decode(y1)
    with torch.no_grad():
        y2 = model_hf.generate(x, max_new_tokens=20, do_sample=False)[0]
    out2 = tokenizer.decode(y2)
    assert torch.equal(y1, y2)
    assert out1 == out2                                   # the output strings too, exactly
    assert T.teaching_tokenizer().decode(y1) == out1
