"""The order of the test files under pytest-xdist: each of ``make test``'s workers starts with
an equal share of the long files; under nbval, the long notebooks go first.

``--dist worksteal`` first hands each worker an equal run of the collected tests (by count), in
order; a worker that runs out steals from the END of another's queue. Alphabetically, most of
the long files (the decoding tests, the browser) fell in the first run. Here the long files of
:data:`SECONDS` are dealt to the workers (two: by kind, :data:`WAITING`; more: by their measured
time, the longest first, each to the worker with least so far), and the other files, short ones
with many tests, fill each worker's run up to its count; each run ends with short files, so what
is stolen late is short. Only the order of files changes; every test runs, and a file's tests
stay together in their own order (a module's shared fixtures are set up once per worker).

The seconds are what ``make test`` measured per file (artifacts/test-run/unit.xml, summed over
the file's tests; the panel's file counts the layout file's too, :data:`TOGETHER`): out-of-date
numbers make the run slower, never different.

Loaded as a plugin (``-p tests._xdist_order``, the Makefile's nbval stages), it orders the
notebooks for ``--dist loadfile``: the long ones (:data:`NOTEBOOK_SECONDS`, by file name, both
editions) first, the others as collected, each notebook's cells together and in order. In
collection order the Chinese 07 came last, and one worker ran it alone at the end.
"""
SECONDS = {
    "test_browser_panel.py": 89, "test_grader.py": 51, "test_mutations_suite.py": 25,
    "test_mutations.py": 12, "test_decoding_batched.py": 12, "test_make_stop.py": 10,
    "test_kernel_zygote.py": 12, "test_my_copy.py": 9, "test_decoding_methods.py": 6,
    "test_decoding_reference.py": 8, "test_grader_options.py": 9, "test_gpt2.py": 7,
    "test_tokenizer.py": 5, "test_packaging.py": 4, "test_toy_lab_derivation.py": 3,
    "test_toy_five_token.py": 3, "test_decoding_generate.py": 1, "test_gpt2_offline.py": 1,
}

# files that share a fixture of the worker's session with another file (here the JupyterLab and
# Chromium page of tests/conftest.py's ``lab``): run on the same worker, right after that file,
# so the worker starts one JupyterLab, not two; the host's seconds count both
TOGETHER = {"test_browser_layout.py": "test_browser_panel.py"}


# With two workers, the long files are dealt by kind, so that one worker's waiting meets the
# other's computing: to the first, the browser's files, then the files that mostly wait on
# processes they start (a JupyterLab, a kernel, nbval, a sandbox, a closed port); to the second,
# the grader's classes and the planted-bug runs (several processes at a time), then the files
# that compute in the worker itself. (Dealt by time alone, the waiting files of both workers
# came at the same time, and a core stood idle.)
WAITING = ("test_browser_panel.py", "test_mutations.py", "test_kernel_zygote.py", "test_make_stop.py",
           "test_my_copy.py", "test_grader_options.py", "test_gpt2_offline.py")


def file_of(item) -> str:
    return item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1]


def in_parts(items: list, parts: int = 2) -> list:
    """``items`` reordered for ``parts`` workers: for each worker in turn, its long files, then
    short files up to its share of the count (file order otherwise kept)."""
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(file_of(item), []).append(item)
    for name, host in TOGETHER.items():                 # goes right after its host file
        if name in files and host in files:
            files[host] += files.pop(name)
    long = sorted((name for name in files if name in SECONDS), key=lambda name: -SECONDS[name])
    shares, times = [[] for _ in range(parts)], [0] * parts
    for name in long:
        part = (0 if name in WAITING else 1) if parts == 2 else times.index(min(times))
        shares[part].extend(files[name])
        times[part] += SECONDS[name]
    short = [item for name, its in files.items() if name not in SECONDS for item in its]
    ordered = []
    for part, share in enumerate(shares):
        room = max(0, (part + 1) * len(items) // parts - len(ordered) - len(share))
        ordered += share + (short[:room] if part < parts - 1 else short)
        short = short[room:] if part < parts - 1 else []
    assert sorted(map(id, ordered)) == sorted(map(id, items))      # the same tests, each once
    return ordered


# seconds per notebook under nbval (artifacts/test-run/nbval.xml; the Chinese twin's are the same)
NOTEBOOK_SECONDS = {"07_sampling.ipynb": 7, "05_lm_head.ipynb": 6, "02_embeddings.ipynb": 4,
                    "01_tokenizer.ipynb": 2, "03_attention.ipynb": 2}


def longest_notebooks_first(items: list) -> list:
    """``items`` (nbval's cells) with the files of :data:`NOTEBOOK_SECONDS` first, the longest
    first; otherwise the collected order, and each file's cells in their order."""
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        first.setdefault(item.nodeid.split("::", 1)[0], index)

    def key(item):
        path = item.nodeid.split("::", 1)[0]
        return -NOTEBOOK_SECONDS.get(path.rsplit("/", 1)[-1], 0), first[path]
    return sorted(items, key=key)           # stable: a file's cells keep their order


def pytest_collection_modifyitems(config, items):
    """The plugin's hook: notebooks (nbval items) under two or more xdist workers, longest first."""
    if hasattr(config, "workerinput") and config.workerinput.get("workercount", 0) > 1 \
            and all(item.nodeid.split("::", 1)[0].endswith(".ipynb") for item in items):
        items[:] = longest_notebooks_first(items)
