"""The interface article's five-token model: config, input, targets and hand-set weights.

Taught in notebooks 02 (embeddings), 03 (attention), 04 (block), 05 (lm_head) and 06 (loss);
notebook 07 samples from its last row of logits.

The model is ``course_lib.model.GPT`` with a tiny config: V = 5 tokens (a→0 … e→4), D = 4
features, one head, one Pre-Norm block, an MLP 4→16→4 with ReLU, eight position rows and an
untied output layer with a bias. Its weights are set by hand (nothing is trained) and live in
``data/five_token_model.json``: each table is a small matrix, and the file's notes say which
entries are round hand-set numbers and which were solved so that the article's figures
print. The model computes in float64; where the article printed float32 numbers the course
shows the float32 rounding of the float64 result, which is the same on every CPU
(``course_lib.figures.margins`` explains why; notebook 06 teaches it).
``course_lib.toys.derive_five_token`` re-creates the solved entries. Its figures are computed in
``course_lib.figures.interface`` (``toy_*``).
"""
from __future__ import annotations

from ..model import GPTConfig
from ..tokens.vocab import FIVE_TOKEN_VOCAB
from .spec import ToyModel

FIVE_TOKEN_CONFIG = GPTConfig(
    vocab_size=5,        # a, b, c, d, e
    n_positions=8,       # the position table has eight rows
    n_embd=4,            # four features per position
    n_head=1,
    n_layer=1,
    mlp_hidden=16,       # Linear 4→16 → ReLU → Linear 16→4
    activation="relu",
    head_bias=True,      # lm_head = nn.Linear(4, 5), with a bias
    tie_weights=False,   # the output table is not the token table
)

TEXT_IDS = [0, 1, 0, 1]        # the teaching text a|b|a|b
INPUT_IDS = TEXT_IDS[:-1]      # [0, 1, 0]: a|b|a goes into the model
TARGET_IDS = TEXT_IDS[1:]      # [1, 0, 1]: the token that follows each input position

FIVE_TOKEN = ToyModel(name="five-token model", config=FIVE_TOKEN_CONFIG,
                      weights_file="five_token_model.json", vocab=FIVE_TOKEN_VOCAB,
                      prompt_ids=tuple(INPUT_IDS))
