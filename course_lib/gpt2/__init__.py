"""GPT-2 small: a configuration of the course's one GPT, and a loader for its real weights.

* ``config``   — ``GPT2_SMALL_CONFIG``, ``gpt2_config``, Hugging Face's config.json, ``random_gpt2``, ``shapes_only_gpt2`` (02, 05, 07)
* ``loader``   — where the weights are, download and SHA-256, safetensors → our names, ``load_gpt2`` (05, 07)
* ``checkpoint`` — the weights file's pinned identity; reading it; its tensors' dtypes and values checked
* ``fetch``    — ``download()`` from a notebook cell; ``gpt2_or_hint`` for the GPT-2 cells (05, 07)
* ``__main__`` — ``python -m course_lib.gpt2 [--download] [PATH]``

The gpt2 article's figures are computed in ``course_lib.figures.gpt2``.
"""
from .config import (GPT2_SMALL_CONFIG, HF_ACTIVATIONS, config_from_hf_json, gpt2_config, random_gpt2,
                     shapes_only_gpt2)
from .loader import (HF_REVISION, WEIGHTS_ENV, WEIGHTS_SHA256, find_weights, gpt2_or_message, gpt2_or_none,
                     hf_to_course_state_dict, load_gpt2, no_weights_line)
from .fetch import download, download_hint, gpt2_or_hint

__all__ = ["GPT2_SMALL_CONFIG", "HF_ACTIVATIONS", "config_from_hf_json", "gpt2_config", "random_gpt2", "shapes_only_gpt2",
           "HF_REVISION", "WEIGHTS_ENV", "WEIGHTS_SHA256", "find_weights", "gpt2_or_message", "gpt2_or_none",
           "hf_to_course_state_dict", "load_gpt2", "no_weights_line",
           "download", "download_hint", "gpt2_or_hint"]
