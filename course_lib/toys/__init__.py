"""The hand-set toy models: nothing trained, every weight in data/ (notebooks 02–07).

* ``spec``              — ``ToyModel``: name, config, weight file, vocabulary, prompt; ``.load()``, ``.run()``
* ``five_token``        — ``FIVE_TOKEN``: the interface article's five-token model (02–07)
* ``lab``               — ``LAB``: the lab article's twelve-token model and its helpers (02, 03, 07)
* ``weights``           — reading and writing the weight files
* ``derive_five_token`` — how data/five_token_model.json was made (``python -m course_lib.toys.derive_five_token [--write]``)
* ``derive_lab``        — how data/lab_model.json was made (``python -m course_lib.toys.derive_lab [--write]``)
* ``loss_last_bound``   — the proof that no weights print the article's 0.370652 (06)
"""
