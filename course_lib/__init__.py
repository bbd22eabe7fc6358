"""course_lib: the verified code behind the course notebooks — the map.

One subpackage per layer; every module's docstring says which notebook teaches it. A module
imports from its own subpackage and from lower layers only. The layers, lowest first (a comma
joins layers side by side, which do not import each other):

    data → tokens, model → gpt2, decoding → toys → figures → ui → bench, exercises → grading, check

tests/test_layers.py checks every import against that line and names each exception with its
reason (``ui.language``, the language the labels speak, which stands on nothing else of
course_lib, is open to every layer).

Where each notebook's code lives
    01_tokenizer   ``tokens.bpe`` (BPE by hand, tiktoken offline), ``tokens.streaming``
                   (``StreamingDecoder``), ``tokens.vocab``, ``ui.token_display``
    02_embeddings  ``model.embeddings``, ``toys.five_token``, ``toys.lab``
    03_attention   ``model.attention`` (attention and LayerNorm by hand)
    04_block       ``model.attention``, ``model.gpt`` (the Pre-Norm block)
    05_lm_head     ``model.lm_head``, ``gpt2.config``, ``gpt2.loader``
    06_loss        ``model.loss``, ``figures.margins`` (float32 vs float64), ``toys.loss_last_bound``
                   (how tightly the article pins the weights)
    07_sampling    ``decoding.*`` (rules, pipeline, draw, generate, kv_cost, stats), ``ui.panel``
    every notebook ``model.gpt`` (the one GPT), ``figures`` (closing ✓ cells), ``ui.plots``,
                   ``ui.start`` (the first cell: language, hint, map), ``ui.pipeline_map`` (the map at the top),
                   ``ui.checks`` (the checks' summary line)

The layers
    ``data``       finds data/ (``$COURSE_DATA_DIR`` or the checkout above the package) and reads it;
                   the shared errors: ``MissingFileError``, ``ChecksumError``, ``DamagedFileError``,
                   ``UnknownNameError``
    ``tokens``     ``bpe``, ``streaming``, ``vocab``
    ``model``      ``gpt`` (``GPTConfig``, ``GPT``, ``KVCache``), ``embeddings``, ``attention``, ``lm_head``, ``loss``
    ``gpt2``       ``config`` (GPT-2 small as a GPTConfig), ``loader`` (its real weights);
                   ``fetch.download()`` from a notebook cell; ``python -m course_lib.gpt2 [--download]``
    ``toys``       ``spec.ToyModel``; ``five_token.FIVE_TOKEN`` and ``lab.LAB``; ``weights``;
                   ``derive_five_token`` and ``derive_lab`` (how their weights were made);
                   ``loss_last_bound`` (why no weights print the article's 0.370652)
    ``decoding``   ``checks``; ``probs``; ``rules`` — ONE class per sampling rule (``Temperature``,
                   ``TopK``, ``TopP``, ``MinP``: check, per-row ``ids``, batched ``mask``), run in the
                   order of ``rules.FILTERS``; ``batched`` (not taught: what the batched masks
                   call, one partition per row, one comparison); ``variants`` (nanoGPT's and GPT-2's own cuts);
                   ``pipeline.SamplingRule``; ``draw``; ``generate`` — THE generation loop;
                   ``kv_cost``; ``stats``
    ``figures``    ``registry`` (``check_figure``), ``computers`` (``check_inline``), and one function per
                   figure id in ``interface``, ``lab``, ``decoding``, ``gpt2`` — data/figures.json's
                   ``"computer"`` field names it (``"lab.top_p"`` → ``course_lib.figures.lab:top_p``);
                   ``margins``
    ``ui``         ``plots``, ``token_display``, ``panel``, ``palette``, ``pipeline_map`` (the map),
                   ``checks`` (the Checks cell's summary line), ``recorded`` (GPT-2's recorded values), ``fonts``,
                   ``language`` (``set_language("en" | "zh")``), ``strings`` (every label, both languages)
                   and ``start`` (every notebook's first cell, in one call)
    ``bench``      ``python -m course_lib.bench.sampling`` (``generate``, ``memory``, ``kv_cache``):
                   the course beside transformers, ratios and the same-work checks
    ``exercises``  one module per notebook (``ch01_tokenizer`` … ``ch07_sampling``): a checker per
                   exercise, ``check_<name>(fn)`` → ``Result``; worked solutions in notebooks/solutions/
                   (``03_attention_solutions.ipynb``, …)
    ``grading``    ``python -m course_lib.grading`` grades a class with those checkers, each
                   submission in its own bubblewrap sandbox (for instructors; not taught)
    ``check``      ``python -m course_lib.check``: nbval on the notebooks, on a checkout or an
                   installed course (for instructors; not taught)
"""
__version__ = "0.1.0"

# In a notebook kernel, the first import of course_lib (after a restart: the first cell, or any
# cell that imports from course_lib, as every exercise's check cell does) turns on the NameError
# hint: "run the notebook from the top" (ui.hints). Nothing happens outside a kernel.
from .ui.hints import explain_name_errors_in_a_notebook as _explain  # noqa: E402

_explain()
