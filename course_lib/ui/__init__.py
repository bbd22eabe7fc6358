"""What the notebooks show: plots, token spans, the sampling panel, one palette.

* ``plots``         — matplotlib helpers (02–07)
* ``diagrams``      — pictures: the merge loop (01), causal mask and heads (03), KV cache (07)
* ``token_display`` — coloured token spans, byte tables, a live tokenizer box (01)
* ``panel``         — the interactive sampling panel (07)
* ``palette``       — the colours
* ``hints``         — a NameError in a cell says to run the notebook from the top (all notebooks)
* ``pipeline_map``  — the map at the top of every notebook, with "you are here" (all notebooks)
* ``checks``        — the closing Checks cell: one summary line, every ✓ line one click away (all)
* ``recorded``      — GPT-2's values as the articles recorded them, shown without weights (05, 07)
* ``fonts``         — a CJK font behind matplotlib's default, no missing-glyph warnings (02–07)
* ``language``      — ``set_language("en" | "zh")``: the language of every label above (all notebooks)
* ``start``         — ``start("03", language="en")``: every notebook's first cell, the four above in one call
* ``strings``       — those labels, once per language (English and Chinese)
"""
