"""The lab article's twelve-token model: config, prompt and hand-set weights.

Taught in notebooks 02 (embeddings: its E and P tables, x₆), 03 (attention: two heads of
width 2, q₆ and the head weights of row 6) and 07 (sampling: row 5's distribution, the
append, the KV cache, generation until <|endoftext|>). ``course_lib.lab_figures`` computes
every lab figure from it.

The model is ``course_lib.model.GPT`` with V = 12 tokens (``vocab.LAB_PIECES``), D = 4
features, 2 heads of width 2, one Pre-Norm block, an MLP 4→4→4 with ReLU, 16 position rows
and an output layer with a bias. Nothing is trained: the weights live in
``data/lab_model.json``, every entry a multiple of 0.5 except the 12 output biases
(3 decimals). The file's ``notes`` say which entries are hand-set and which were solved;
``course_lib.lab_derivation`` re-creates the solved ones.

Positions: the article counts tokens from 1 ("x₆ is the sixth token"); tensors count from 0,
so the article's x₆ is row 5 of the model's tensors.
"""
from __future__ import annotations

from . import weight_files
from .figures import DATA_DIR
from .model import GPT, GPTConfig
from .vocab import LAB_END_ID, LAB_PIECES, LAB_VOCAB

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
LAB_WEIGHTS_PATH = DATA_DIR / "lab_model.json"

__all__ = ["LAB_CONFIG", "LAB_PROMPT_IDS", "LAB_SENTENCE_IDS", "LAB_WEIGHTS_PATH", "LAB_PIECES",
           "LAB_VOCAB", "LAB_END_ID", "load_lab_model", "lab_model_from_tables", "read_lab_weights",
           "lab_config_summary", "lab_id", "article_position"]


def lab_config_summary(config: GPTConfig = LAB_CONFIG) -> dict:
    """The config as a plain dict (stored in the weight file so a mismatch is caught)."""
    return weight_files.config_summary(config)


def read_lab_weights(path=LAB_WEIGHTS_PATH) -> dict:
    """The weight file as a dict: ``about``, ``config``, ``notes`` and ``tables``."""
    return weight_files.read_weight_file(path, "lab model")


def lab_model_from_tables(tables: dict) -> GPT:
    """A float64 lab GPT in eval mode whose parameters are exactly ``tables``."""
    return weight_files.model_from_tables(LAB_CONFIG, tables, "lab model")


def load_lab_model(path=LAB_WEIGHTS_PATH) -> GPT:
    """The lab's hand-set twelve-token model (float64, eval mode) with the shipped weights."""
    return weight_files.load_model_file(LAB_CONFIG, path, "lab model")


def lab_id(piece: str) -> int:
    """The id of a piece, written with a real space or with ␣: lab_id("␣roof") == 6."""
    return LAB_VOCAB.id(piece.replace("␣", " "))


def article_position(index: int) -> int:
    """The article's 1-based position of a 0-based tensor row: row 5 is the article's x₆."""
    return index + 1
