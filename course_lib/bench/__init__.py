"""Benchmarks: scripts, not tests (both use random weights or logits).

* ``sampling`` — batched top-k / top-p / min-p on [64, 50257] vs the per-row loop (``python -m course_lib.bench.sampling``)
* ``kv_cache`` — GPT-2 small, with and without the KV cache (``python -m course_lib.bench.kv_cache``)
"""
