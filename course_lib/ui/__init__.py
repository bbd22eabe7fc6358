"""What the notebooks show: plots, token spans, the sampling panel, one palette.

* ``plots``         — matplotlib helpers (02–07)
* ``token_display`` — coloured token spans, byte tables, a live tokenizer box (01)
* ``panel``         — the interactive sampling panel (07)
* ``palette``       — the colours
* ``hints``         — a NameError in a cell says to run the notebook from the top (all notebooks)
"""
