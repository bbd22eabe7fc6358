"""The lab article's twelve-token model: config, prompt and hand-set weights.

Taught in notebooks 02 (embeddings: its E and P tables, x₆), 03 (attention: two heads of
width 2, q₆ and the head weights of row 6) and 07 (sampling: row 5's distribution, the
append, the KV cache, generation until <|endoftext|>). ``course_lib.figures.lab`` computes
every lab figure from it with the helpers below.

The model is ``course_lib.model.GPT`` with V = 12 tokens (``tokens.vocab.LAB_PIECES``), D = 4
features, 2 heads of width 2, one Pre-Norm block, an MLP 4→4→4 with ReLU, 16 position rows
and an output layer with a bias. Nothing is trained: the weights live in
``data/lab_model.json``, every entry a multiple of 0.5 except the 12 output biases
(3 decimals). The file's ``notes`` say which entries are hand-set and which were solved;
``course_lib.toys.derive_lab`` re-creates the solved ones.

Positions: the article counts tokens from 1 ("x₆ is the sixth token"); tensors count from 0,
so the article's x₆ is row 5 of the model's tensors.
The article's row 5 (the last prompt token, ␣the) is index 4; the appended ␣roof, x₆, is
index 5 (:data:`NEW_ROW`).
"""
from __future__ import annotations

from itertools import accumulate

import torch

from ..decoding.generate import Generation, generate
from ..decoding.probs import ranked_ids, softmax_with_temperature
from ..model import GPTConfig
from ..tokens.vocab import LAB_END_ID, LAB_VOCAB
from .spec import ToyModel

LAB_CONFIG = GPTConfig(
    vocab_size=12,       # the, ␣the, ␣cat, ␣dog, ␣climb, ed, ␣roof, ␣wall, ␣sofa, ␣floor, ., <|endoftext|>
    n_positions=16,      # room for the sentence and a few more tokens
    n_embd=4,            # four features per position
    n_head=2,            # two heads of width 2
    n_layer=1,
    mlp_hidden=4,        # Linear 4→4 → ReLU → Linear 4→4
    activation="relu",
    head_bias=True,      # the output layer has a bias per token
    tie_weights=False,
)

LAB_PROMPT_IDS = [0, 2, 4, 5, 1]              # "the cat climbed the"
LAB_SENTENCE_IDS = [0, 2, 4, 5, 1, 6, 10]     # "the cat climbed the roof."

LAB = ToyModel(name="lab model", config=LAB_CONFIG, weights_file="lab_model.json",
               vocab=LAB_VOCAB, prompt_ids=tuple(LAB_PROMPT_IDS))


def lab_id(piece: str) -> int:
    """The id of a piece, written with a real space or with ␣: lab_id("␣roof") == 6."""
    return LAB_VOCAB.id(piece.replace("␣", " "))


def article_position(index: int) -> int:
    """The article's 1-based position of a 0-based tensor row: row 5 is the article's x₆."""
    return index + 1


ROOF = lab_id("␣roof")          # 6: the token the article appends first
PERIOD = lab_id(".")            # 10: appended second
NEW_ROW = len(LAB_PROMPT_IDS)   # 5: tensor index of the article's x₆ (the sixth token)


def piece(token_id: int) -> str:
    return LAB_VOCAB.piece(int(token_id))


def next_token_probs(model, ids=LAB_PROMPT_IDS, temperature: float = 1.0) -> list[float]:
    """softmax(last row / T), in id order (list of V floats)."""
    return softmax_with_temperature(LAB.last_row_logits(model, ids), temperature)


def row6_head_weights(model, ids=LAB_PROMPT_IDS + [ROOF]) -> torch.Tensor:
    """Attention weights of the new row (x₆, index 5) in both heads: (H=2, 6 keys)."""
    _, trace = LAB.run(model, ids)
    return trace["layers"][0]["attention_weights"][0, :, NEW_ROW, :]


def ranked_table(probs, kept=None) -> list[tuple[int, str, float, float]]:
    """(id, piece, probability, running sum) rows in ranked order, for the ids in ``kept``
    (default: all ids). The running sum is the walk the article's u falls into."""
    order = [i for i in ranked_ids(probs) if kept is None or i in set(kept)]
    sums = accumulate(probs[i] for i in order)
    return [(i, piece(i), probs[i], total) for i, total in zip(order, sums)]


def greedy_generation(model, prompt_ids=LAB_PROMPT_IDS, max_new_tokens: int = 8,
                      record_logits: bool = False) -> Generation:
    """Greedy generation (with the KV cache) until <|endoftext|> or ``max_new_tokens`` ids."""
    return generate(model, prompt_ids, max_new_tokens, end_id=LAB_END_ID, record_logits=record_logits)
