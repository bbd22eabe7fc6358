"""Real GPT-2 without the download: the recorded values shown without weights, the
download hint that works from a notebook cell, and ``course_lib.gpt2.download()`` wired to the
pinned, checksum-verified download (no network: the Hub call is replaced)."""
import pytest

import course_lib.gpt2 as gpt2
from course_lib.data import ChecksumError
from course_lib.figures.registry import figure
from course_lib.gpt2 import HF_REVISION, WEIGHTS_ENV, fetch, loader
from course_lib.ui import recorded
from test_gpt2_loader import no_weights_anywhere  # noqa: F401  (the fixture: a machine without GPT-2)

WHAT = "show GPT-2's five most likely tokens after 'The meaning of life is'"


def test_recorded_top5_is_the_registry_entry_labelled_as_recorded():
    values = figure("gpt2.top5")["values"]
    assert recorded.recorded_top5() == list(zip(values["tokens"]["expected"], values["probs"]["expected"]))
    text = recorded.recorded_top5_text()
    assert text.startswith("[RECORDED by the article with pretrained GPT-2, not computed here")
    assert "run with the weights to compute it yourself" in text
    rows = [line.split() for line in text.splitlines()[4:]]
    assert rows[0] == ["1", "'", "not'", "0.108805"] and rows[4] == ["5", "'", "a'", "0.039578"], rows
    assert all(len(line) <= 88 for line in text.splitlines())


def test_recorded_greedy_and_top_p_counts():
    assert "greedy picks id 407 = ' not': 'The meaning of life is not'" in recorded.recorded_greedy_text()
    text = recorded.recorded_top_p_text()
    assert "keeps 1 token after" in text and "keeps 3651 tokens after" in text and "p = 0.998" in text


def test_recorded_chart_says_it_is_recorded():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = recorded.recorded_top5_chart()
    heights = [round(bar.get_height(), 6) for bar in ax.patches]
    assert heights == [0.108805, 0.082914, 0.051284, 0.048244, 0.039578]
    assert "recorded" in ax.get_title()
    assert any("not computed here" in t.get_text() for t in ax.figure.texts)
    plt.close(ax.figure)


def test_without_weights_the_hint_is_a_call_that_works_in_a_cell(no_weights_anywhere):
    model, line = gpt2.gpt2_or_hint(WHAT)
    assert model is None
    assert fetch.DOWNLOAD_CALL in line and WHAT in " ".join(line.split())
    assert all(len(row) <= 88 for row in line.splitlines())
    assert "python -m" not in line                 # no shell command that needs .venv on PATH
    scope = {}
    exec(compile(fetch.DOWNLOAD_CALL.replace("course_lib.gpt2.download()", "call = course_lib.gpt2.download"),
                 "<cell>", "exec"), scope)
    assert scope["call"] is fetch.download


def test_a_wrong_setting_keeps_the_loaders_own_message(no_weights_anywhere, tmp_path, monkeypatch):
    monkeypatch.setenv(WEIGHTS_ENV, str(tmp_path / "nowhere.safetensors"))
    model, line = gpt2.gpt2_or_hint(WHAT)
    assert model is None and "nowhere.safetensors" in line and fetch.DOWNLOAD_CALL not in line


def test_with_weights_the_model_comes_back(monkeypatch):
    sentinel = object()
    monkeypatch.setattr(loader, "gpt2_or_none", lambda: sentinel)
    assert gpt2.gpt2_or_hint(WHAT) == (sentinel, None)


def test_download_fetches_the_pinned_revision_and_checks_it(no_weights_anywhere, tmp_path, monkeypatch, capsys):
    import huggingface_hub as hub

    calls = []
    file = tmp_path / "model.safetensors"
    file.write_bytes(b"not the real file")

    def fake_download(repo_id, filename, revision=None, cache_dir=None):
        calls.append((repo_id, filename, revision))
        return str(file)

    monkeypatch.setattr(hub, "hf_hub_download", fake_download)
    monkeypatch.setattr(fetch, "connection_problem", lambda *args, **kwargs: None)   # as if online
    with pytest.raises(ChecksumError, match="damaged"):
        gpt2.download()
    assert calls == [("openai-community/gpt2", "model.safetensors", HF_REVISION)]
    monkeypatch.setattr(loader, "sha256_of", lambda path: loader.WEIGHTS_SHA256)   # as if it were right
    assert gpt2.download() == file
    assert "Run the notebook again from the top" in capsys.readouterr().out
