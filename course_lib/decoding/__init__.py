"""Decoding: from a row of logits to the next id, and the generation loop (notebook 07).

* ``checks``   — argument checks, each naming the argument it rejects
* ``probs``    — softmax with temperature, greedy, ranking, renormalising (per row and [B, V])
* ``rules``    — ONE object per sampling rule: ``Temperature``, ``TopK``, ``TopP``, ``MinP``, each
                 with its check, its per-row ``ids`` and its batched ``mask``; ``FILTERS`` is the order
* ``batched``  — not taught: what the batched masks call (one partition per row, one comparison)
* ``variants`` — nanoGPT's top-k cut and GPT-2's legacy top-p, for comparison
* ``pipeline`` — ``SamplingRule`` (temperature → top-k → top-p → min-p → renormalise), per row and batched
* ``draw``     — intervals on [0, 1), u, seeded draws
* ``generate`` — THE generation loop, ``generate`` (KV cache, streaming text, optional logits record)
* ``kv_cost``  — what the KV cache stores and saves, counted
* ``stats``    — Pearson's chi-square test of the draws

Everything a notebook uses is importable from here: ``from course_lib import decoding``.
"""
from .checks import check_logits, check_min_p, check_probs, check_rows, check_temperature, check_top_k, check_top_p, check_u
from .draw import (draw_counts, interval_boundaries, pick_interval, sample_interval, sample_interval_batched,
                   sample_interval_ranked, sample_seeded, sample_seeded_batched)
from .generate import Generation, GenerationStep, RuleChoice, generate, greedy_choice
from .kv_cost import kv_numbers_per_token, predicted_speedup
from .pipeline import SamplingRule, SamplingStep, apply_batched, filter_batched, sample_batched
from .probs import (entropy, greedy_id, greedy_ids_batched, naive_softmax, random_logit_batch, ranked_batched,
                    ranked_ids, renormalize, renormalize_batched, softmax64_batched, softmax_with_temperature,
                    softmax_with_temperature_batched)
from .rules import FILTERS, MinP, Temperature, TopK, TopP, min_p_ids, min_p_mask, top_k_ids, top_k_mask, top_p_ids, top_p_mask
from .stats import chi_square_p_value, chi_square_statistic
from .variants import (gpt2_legacy_cutoff, gpt2_legacy_top_p_ids, gpt2_legacy_top_p_mask, top_k_strict_cut,
                       top_k_strict_cut_mask)
