"""course_lib: the verified helpers behind the course notebooks.

One module per idea; each module's docstring says which notebook teaches it.

* ``tokenizer``  — GPT-2's byte-level BPE from scratch, tiktoken built offline, streaming decode (01)
* ``figures``    — the registry of the articles' figures and ``check_figure`` (every notebook)
* ``model``      — one readable GPT: config, blocks, trace of intermediates, KV cache (02–07)
* ``vocab``      — the toy vocabularies of the five-token and twelve-token models (01, 02, 07)
"""
__version__ = "0.1.0"
