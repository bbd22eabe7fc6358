"""The order of the test files under pytest-xdist: each of ``make test``'s two workers starts
with an equal share of the long files.

``--dist worksteal`` first hands the first half of the collected tests (by count) to one worker
and the second half to the other; a worker that runs out steals from the END of the other's
queue. Alphabetically, most of the long files (the decoding tests, the browser) fell in the first
half. Here the long files of :data:`SECONDS` are dealt to two halves by their measured time
(the longest first, each to the half with less so far), and the other files, short ones with
many tests, fill each half up to its count; each half ends with short files, so what is stolen
late is short. Only the order of files changes; every test runs, and a file's tests stay
together in their own order (a module's shared fixtures are set up once per worker).

The seconds are what ``make test`` measured per file (artifacts/test-run/unit.xml, summed over
the file's tests, 2026-12-02, two workers on a shared machine): out-of-date numbers make the run
slower, never different.
"""
SECONDS = {
    "test_decoding_batched.py": 40, "test_browser_panel.py": 60, "test_mutations_suite.py": 30,
    "test_grader.py": 35, "test_mutations.py": 20, "test_decoding_methods.py": 25,
    "test_make_stop.py": 18, "test_decoding_reference.py": 30, "test_gpt2.py": 10,
    "test_tokenizer.py": 8, "test_packaging.py": 7, "test_figures.py": 7, "test_my_copy.py": 5,
    "test_toy_five_token.py": 4, "test_toy_lab_derivation.py": 5, "test_decoding_generate.py": 4,
    "test_gpt2_offline.py": 4,
}


def file_of(item) -> str:
    return item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1]


def two_halves(items: list) -> list:
    """``items`` reordered: [long files of half 1, short files up to half the count, long files
    of half 2, the remaining short files] (file order otherwise kept)."""
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(file_of(item), []).append(item)
    long = sorted((name for name in files if name in SECONDS), key=lambda name: -SECONDS[name])
    halves, times = ([], []), [0, 0]
    for name in long:
        half = 0 if times[0] <= times[1] else 1
        halves[half].append(name)
        times[half] += SECONDS[name]
    short = [item for name, its in files.items() if name not in SECONDS for item in its]
    first = [item for name in halves[0] for item in files[name]]
    second = [item for name in halves[1] for item in files[name]]
    room = max(0, len(items) // 2 - len(first))
    ordered = first + short[:room] + second + short[room:]
    assert sorted(map(id, ordered)) == sorted(map(id, items))      # the same tests, each once
    return ordered
