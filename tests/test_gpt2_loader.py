"""Where course_lib looks for GPT-2's weights, what it says when they are not there or damaged.

No network: a download is only ever attempted with ``download=True`` and is replaced here by a
stand-in for ``hf_hub_download``.
"""
import hashlib
import math
import re

import pytest
import torch
from safetensors.torch import save_file

from course_lib.gpt2 import __main__ as gpt2
from course_lib.data import ChecksumError, DamagedFileError, MissingFileError, sha256_of
from course_lib.gpt2 import HF_REVISION, WEIGHTS_ENV, find_weights, gpt2_config, load_gpt2
from course_lib.gpt2 import no_weights_line
from course_lib.gpt2 import fetch as gpt2_fetch, loader as gpt2_loader

TINY = dict(n_layer=1, n_embd=8, n_head=2, vocab_size=11, n_positions=6)


@pytest.fixture
def no_weights_anywhere(tmp_path, monkeypatch):
    """An empty Hugging Face cache and no environment variable: a machine without GPT-2."""
    cache = tmp_path / "hf_cache"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv(WEIGHTS_ENV, raising=False)
    return cache


def tiny_checkpoint(folder):
    """A GPT-2-layout safetensors file for a one-block model (official names, no prefix)."""
    torch.manual_seed(0)
    D, V, P, hidden = 8, 11, 6, 32
    t = {"wte.weight": torch.randn(V, D), "wpe.weight": torch.randn(P, D),
         "ln_f.weight": torch.ones(D), "ln_f.bias": torch.zeros(D),
         "h.0.ln_1.weight": torch.ones(D), "h.0.ln_1.bias": torch.zeros(D),
         "h.0.ln_2.weight": torch.ones(D), "h.0.ln_2.bias": torch.zeros(D),
         "h.0.attn.c_attn.weight": torch.randn(D, 3 * D), "h.0.attn.c_attn.bias": torch.randn(3 * D),
         "h.0.attn.c_proj.weight": torch.randn(D, D), "h.0.attn.c_proj.bias": torch.randn(D),
         "h.0.mlp.c_fc.weight": torch.randn(D, hidden), "h.0.mlp.c_fc.bias": torch.randn(hidden),
         "h.0.mlp.c_proj.weight": torch.randn(hidden, D), "h.0.mlp.c_proj.bias": torch.randn(D)}
    folder.mkdir(parents=True, exist_ok=True)
    save_file(t, str(folder / "model.safetensors"))
    return folder / "model.safetensors", t


def test_no_weights_says_where_it_looked_and_how_to_get_them(no_weights_anywhere):
    with pytest.raises(MissingFileError) as err:
        find_weights()
    message = str(err.value)
    assert f"${WEIGHTS_ENV}: not set" in message
    assert str(no_weights_anywhere / "models--openai-community--gpt2") in message
    assert "python -m course_lib.gpt2 --download" in message
    assert f"export {WEIGHTS_ENV}=" in message
    assert HF_REVISION in message                     # the exact file to fetch by hand


def test_load_without_weights_raises_and_never_downloads(no_weights_anywhere, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("tried to download without being asked")
    monkeypatch.setattr(gpt2_loader, "download_weights", no_network)
    monkeypatch.setattr(gpt2_fetch, "download_weights", no_network)
    with pytest.raises(MissingFileError):
        load_gpt2()


def test_wrong_path_is_named_in_the_error(tmp_path):
    missing = tmp_path / "nowhere" / "model.safetensors"
    with pytest.raises(MissingFileError, match="the path you gave: .*nowhere/model.safetensors"):
        find_weights(missing)


def test_env_var_pointing_nowhere_is_reported(no_weights_anywhere, tmp_path, monkeypatch):
    monkeypatch.setenv(WEIGHTS_ENV, str(tmp_path / "gone.safetensors"))
    with pytest.raises(MissingFileError, match=rf"\${WEIGHTS_ENV}: .*gone.safetensors \(no such file\)"):
        find_weights()


def test_found_through_env_var_file_or_folder(no_weights_anywhere, tmp_path, monkeypatch):
    file, _ = tiny_checkpoint(tmp_path / "weights")
    monkeypatch.setenv(WEIGHTS_ENV, str(file))
    assert find_weights() == file
    monkeypatch.setenv(WEIGHTS_ENV, str(file.parent))
    assert find_weights() == file


def test_found_in_the_hugging_face_cache(no_weights_anywhere):
    snapshot = no_weights_anywhere / "models--openai-community--gpt2" / "snapshots" / HF_REVISION
    file, _ = tiny_checkpoint(snapshot)
    assert find_weights() == file


def test_found_under_the_old_repository_name(no_weights_anywhere):
    file, _ = tiny_checkpoint(no_weights_anywhere / "models--gpt2" / "snapshots" / "abc123")
    assert find_weights() == file


def test_conv1d_weights_are_transposed_and_split(tmp_path):
    file, t = tiny_checkpoint(tmp_path)
    model = load_gpt2(file, config=gpt2_config(**TINY))
    attn = model.blocks[0].attn
    q, k, v = t["h.0.attn.c_attn.weight"].split(8, dim=1)      # HF Conv1D: (in, out)
    assert torch.equal(attn.query.weight, q.t())                 # nn.Linear: (out, in)
    assert torch.equal(attn.key.weight, k.t())
    assert torch.equal(attn.value.weight, v.t())
    assert torch.equal(attn.value.bias, t["h.0.attn.c_attn.bias"][16:])
    assert torch.equal(attn.output.weight, t["h.0.attn.c_proj.weight"].t())
    assert torch.equal(model.blocks[0].mlp.up.weight, t["h.0.mlp.c_fc.weight"].t())
    assert torch.equal(model.blocks[0].mlp.down.weight, t["h.0.mlp.c_proj.weight"].t())
    assert torch.equal(model.lm_head.weight, t["wte.weight"])
    assert not any(p.is_meta for p in model.parameters())


def test_every_loaded_tensor_is_the_files_own_numbers_as_a_view(tmp_path):
    """A random GPT-2 written in Hugging Face's layout (bench.gpt2_file) loads back to the same
    numbers, and the transposed / split tables are views of the file's tensors, not copies."""
    from safetensors.torch import load_file

    from course_lib.bench.gpt2_file import hf_state_dict, save_random_gpt2
    config = gpt2_config(n_layer=2, n_embd=16, n_head=4, vocab_size=37, n_positions=12)
    file = save_random_gpt2(tmp_path, config, seed=3)
    model = load_gpt2(file)                              # config.json beside the file is read
    assert model.config == config
    in_file, loaded = load_file(str(file)), hf_state_dict(model)
    assert sorted(in_file) == sorted(loaded)
    for name, t in in_file.items():
        assert torch.equal(loaded[name], t), name
    for block in model.blocks:
        attn = block.attn
        storages = {lin.weight.untyped_storage().data_ptr() for lin in (attn.query, attn.key, attn.value)}
        assert len(storages) == 1                        # one c_attn table, three views of it
        assert attn.key.weight.stride() == (1, 3 * config.n_embd)    # (out, in) view of (in, 3·out)
        assert block.mlp.up.weight.stride() == (1, config.mlp_hidden)
    assert model.lm_head.weight is model.token_embedding.weight


def test_huge_finite_weights_are_not_called_damaged(tmp_path):
    """The finiteness check sums each table first; finite values whose sum overflows still load."""
    file, t = tiny_checkpoint(tmp_path / "big")
    t["h.0.mlp.c_fc.weight"] = torch.full_like(t["h.0.mlp.c_fc.weight"], 3e38)   # sum: inf in float32
    save_file(t, str(file))
    model = load_gpt2(file, config=gpt2_config(**TINY))
    assert torch.equal(model.blocks[0].mlp.up.weight, t["h.0.mlp.c_fc.weight"].t())


def test_download_checks_the_checksum(no_weights_anywhere, tmp_path, monkeypatch):
    import huggingface_hub as hub

    damaged = tmp_path / "model.safetensors"
    damaged.write_bytes(b"not the real file")
    monkeypatch.setattr(hub, "hf_hub_download", lambda *a, **k: str(damaged))
    with pytest.raises(ChecksumError, match="damaged"):
        load_gpt2(download=True)


def test_sha256_of_reads_the_whole_file(tmp_path):
    data = bytes(range(256)) * 5000                     # larger than one read chunk
    (tmp_path / "f").write_bytes(data)
    assert sha256_of(tmp_path / "f", chunk=4096) == hashlib.sha256(data).hexdigest()


def test_no_weights_line_is_one_fixed_line():
    line = no_weights_line("print GPT-2's five most likely next tokens")
    assert "\n" not in line and WEIGHTS_ENV in line and "--download" in line


def test_a_wrong_env_var_is_an_error_even_with_a_cached_copy(no_weights_anywhere, tmp_path, monkeypatch):
    from course_lib.gpt2 import gpt2_or_none

    tiny_checkpoint(no_weights_anywhere / "models--openai-community--gpt2" / "snapshots" / HF_REVISION)
    monkeypatch.setenv(WEIGHTS_ENV, str(tmp_path / "typo.safetensors"))
    with pytest.raises(MissingFileError, match="typo.safetensors"):
        find_weights()
    with pytest.raises(MissingFileError):
        gpt2_or_none()


def test_gpt2_or_none_is_none_on_a_machine_without_weights(no_weights_anywhere):
    from course_lib.gpt2 import gpt2_or_none

    assert gpt2_or_none() is None


# ------------------------------------------------------------------ damaged checkpoints

def truncated(data, tensors):
    return data[:len(data) * 2 // 3], "truncated"


def wrong_header(data, tensors):
    n = int.from_bytes(data[:8], "little")
    return data[:8] + data[8:8 + n].replace(b'"shape"', b'"shape!').replace(b"{", b"[", 1) + data[8 + n:], \
        "header is not valid"


def html_page(data, tensors):
    page = (b"<!DOCTYPE html>\n<html lang='en'><head><title>openai-community/gpt2 at main</title></head>"
            b"<body><a href='/login'>Log in</a> model.safetensors 548 MB</body></html>\n")
    return page, "HTML page"


def empty_file(data, tensors):
    return b"", "only 0 bytes"


def missing_tensor(data, tensors):
    return {k: v for k, v in tensors.items() if k != "h.0.attn.c_proj.bias"}, "'h.0.attn.c_proj.bias' is missing"


def wrong_shape(data, tensors):
    return dict(tensors, **{"h.0.mlp.c_fc.weight": torch.randn(8, 31)}), r"h.0.mlp.c_fc.weight has shape \(8, 31\)"


def nan_weight(data, tensors):
    w = tensors["h.0.mlp.c_fc.weight"].clone()
    w[3, 5] = math.nan
    return dict(tensors, **{"h.0.mlp.c_fc.weight": w}), r"'h.0.mlp.c_fc.weight' holds 1 non-finite value"


def inf_weights(data, tensors):
    w = tensors["wte.weight"].clone()
    w[0, 0], w[4, 1] = math.inf, -math.inf                # their sum is NaN, each is named
    return dict(tensors, **{"wte.weight": w}), r"'wte.weight' holds 2 non-finite value"


@pytest.mark.parametrize("damage", [truncated, wrong_header, html_page, empty_file, missing_tensor, wrong_shape,
                                    nan_weight, inf_weights])
def test_a_damaged_checkpoint_names_the_file_and_says_what_to_do(tmp_path, damage):
    good, tensors = tiny_checkpoint(tmp_path / "good")
    damaged = tmp_path / "damaged" / "model.safetensors"
    damaged.parent.mkdir()
    content, reason = damage(good.read_bytes(), tensors)
    if isinstance(content, dict):
        save_file(content, str(damaged))
    else:
        damaged.write_bytes(content)
    with pytest.raises(DamagedFileError) as err:
        load_gpt2(damaged, config=gpt2_config(**TINY))
    message = str(err.value)
    assert str(damaged) in message                                   # which file
    assert re.search(reason, message), message                       # what is wrong with it
    assert "What to do: delete" in message and "--download" in message and WEIGHTS_ENV in message
    assert isinstance(err.value, ValueError) and not isinstance(err.value, MissingFileError)


def test_a_damaged_copy_in_the_hugging_face_cache_says_to_delete_the_cached_model(no_weights_anywhere):
    from course_lib.gpt2 import gpt2_or_none

    model_dir = no_weights_anywhere / "models--openai-community--gpt2"
    file, _ = tiny_checkpoint(model_dir / "snapshots" / HF_REVISION)
    file.write_bytes(file.read_bytes()[:100])
    with pytest.raises(DamagedFileError, match=f"delete the cached copy {model_dir}"):
        load_gpt2(config=gpt2_config(**TINY))
    with pytest.raises(DamagedFileError):            # a damaged file is never hidden as "no weights"
        gpt2_or_none()


def test_a_broken_config_json_is_named(tmp_path):
    file, _ = tiny_checkpoint(tmp_path)
    (tmp_path / "config.json").write_text("<html>not json</html>")
    with pytest.raises(DamagedFileError, match=r"config\.json is not a readable GPT-2 config\.json"):
        load_gpt2(file)
    (tmp_path / "config.json").write_text('{"n_layer": 1, "n_embd": 8, "n_head": 2, "vocab_size": 11, '
                                          '"n_positions": 6, "activation_function": "silu"}')
    with pytest.raises(ValueError, match="activation_function 'silu'"):
        load_gpt2(file)


def test_a_float16_file_loads_as_float32(tmp_path):
    file, tensors = tiny_checkpoint(tmp_path)
    save_file({k: v.half() for k, v in tensors.items()}, str(file))
    model = load_gpt2(file, config=gpt2_config(**TINY))
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert torch.equal(model.position_embedding.weight, tensors["wpe.weight"].half().float())


def test_the_command_line_reports_a_damaged_file_without_a_traceback(tmp_path):
    damaged = tmp_path / "model.safetensors"
    damaged.write_bytes(b"PK\x03\x04" + bytes(200))              # a zip (pytorch_model.bin), not safetensors
    with pytest.raises(SystemExit) as exit_:
        gpt2.main([str(damaged)])
    assert str(damaged) in str(exit_.value.code) and "not a safetensors file" in str(exit_.value.code)
