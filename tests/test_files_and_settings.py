"""Every file and setting the course reads is checked when it is read.

* ``data/figures.json``: every field's presence and type, checked when it is loaded; an error
  names the file, the entry and the field. Its "computer" can only name a function of
  ``course_lib.figures`` (it once imported and called ``os:getcwd``).
* A folder or an unreadable file where a data file should be: a ``course_lib.data`` error.
* A toy weight file with a field of the wrong type.
* GPT-2: config.json fields, tensors that are not floating-point, a tensor present with and
  without the ``transformer.`` prefix, unreadable weights or cache — each a clear course_lib
  error, and ``gpt2_or_message`` turns every one into its one line.

Every broken file is a COPY (``COURSE_DATA_DIR`` or a temporary folder); the real files are
never touched. The machine runs the tests as root, so "no permission" is simulated by making
the read raise ``PermissionError``.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from course_lib import data
from course_lib.data import DamagedFileError, UnreadableFileError
from course_lib.figures import registry as R
from course_lib.figures.computers import computer
from course_lib.gpt2 import WEIGHTS_ENV, config_from_hf_json, gpt2_config, gpt2_or_message, load_gpt2
from course_lib.toys.five_token import FIVE_TOKEN

from _copies import writable_copy

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(n_layer=1, n_embd=8, n_head=2, vocab_size=11, n_positions=6)


# --------------------------------------------------------------------------- figures.json

def broken_registry(tmp_path, edit) -> Path:
    """A copy of data/ whose figures.json has one edit; returns the copy's data folder."""
    target = tmp_path / "data"
    writable_copy(ROOT / "data", target)
    registry = json.loads((target / "figures.json").read_text(encoding="utf-8"))
    edit(registry)
    (target / "figures.json").write_text(json.dumps(registry, ensure_ascii=False), encoding="utf-8")
    return target


def load_from(folder: Path, monkeypatch):
    monkeypatch.setenv(data.DATA_ENV, str(folder))
    R.load_registry.cache_clear()
    try:
        return R.load_registry()
    finally:
        R.load_registry.cache_clear()


FIRST = "interface.toy.attention"


def _set_value_field(field, value):
    def edit(registry):
        name = next(iter(registry[FIRST]["values"]))
        registry[FIRST]["values"][name][field] = value
    return edit


REGISTRY_DAMAGE = {
    "decimals: four": (_set_value_field("decimals", "four"), r'values → "\w+" → "decimals": must be an integer'),
    "decimals: true": (_set_value_field("decimals", True), r'"decimals": must be an integer'),
    "tol: string": (_set_value_field("tol", "0.1"), r'"tol": must be a finite number'),
    "float32: 1": (_set_value_field("float32", 1), r'"float32": must be true or false'),
    "expected: null": (_set_value_field("expected", None), r'"expected": must be a number'),
    "a typo'd field": (_set_value_field("decimal", 4), r'"decimal": unknown field'),
    "no values": (lambda r: r[FIRST].pop("values"), r'"values": missing'),
    "no expected": (lambda r: next(iter(r[FIRST]["values"].values())).pop("expected"), r'"expected": missing'),
    "values empty": (lambda r: r[FIRST].__setitem__("values", {}), r'"values": must be a non-empty object'),
    "notebooks: a string": (lambda r: r[FIRST].__setitem__("notebooks", "03_attention"), r'"notebooks": must be'),
    "article unknown": (lambda r: r[FIRST].__setitem__("article", "blog"), r'"article": must be one of'),
    "needs_pretrained_weights: 0": (lambda r: r[FIRST].__setitem__("needs_pretrained_weights", 0),
                                    r'"needs_pretrained_weights": must be true or false'),
    "computer os:getcwd": (lambda r: r[FIRST].__setitem__("computer", "os:getcwd"), r'"computer": must be'),
    "computer outside figures": (lambda r: r[FIRST].__setitem__("computer", "course_lib.data:data_dir"),
                                 r'"computer": must be'),
    "an entry that is a list": (lambda r: r.__setitem__(FIRST, []), r"an entry must be a JSON object"),
    "derived from an unknown file": (lambda r: r[FIRST].__setitem__("weights_derived_from", "x.json"),
                                     r'"weights_derived_from": must be one of'),
}


@pytest.mark.parametrize("damage", sorted(REGISTRY_DAMAGE))
def test_a_damaged_registry_names_the_file_the_entry_and_the_field(tmp_path, monkeypatch, damage):
    edit, message = REGISTRY_DAMAGE[damage]
    folder = broken_registry(tmp_path, edit)
    with pytest.raises(DamagedFileError, match=message) as err:
        load_from(folder, monkeypatch)
    text = str(err.value)
    assert str(folder / "figures.json") in text and f'"{FIRST}"' in text
    assert "git checkout -- data/figures.json" in text


def test_the_shipped_registry_passes_its_schema(monkeypatch):
    assert len(load_from(ROOT / "data", monkeypatch)) > 50


def test_a_registry_entry_cannot_call_anything_outside_course_lib_figures(monkeypatch):
    """Also when the registry is replaced in memory (as tests do), computer() refuses."""
    for name in ("os:getcwd", "course_lib.data:data_dir", "course_lib.figures.lab:torch",
                 "course_lib.figures.lab:greedy_id", "course_lib.figures.registry:load_registry"):
        fake = {FIRST: dict(R.load_registry()[FIRST], computer=name)}
        monkeypatch.setattr(R, "load_registry", lambda fake=fake: fake)
        with pytest.raises((DamagedFileError, KeyError), match="computer"):
            computer(FIRST)


def test_the_make_test_way_of_failing_is_one_clear_line(tmp_path):
    """A wrong field fails a figure's computation (and so its check) with the schema's line,
    not "bad operand type"."""
    folder = broken_registry(tmp_path, _set_value_field("decimals", "four"))
    env = {k: v for k, v in os.environ.items() if k != "COURSE_FIGURE_LOG"}
    env[data.DATA_ENV] = str(folder)
    code = f"from course_lib.figures import compute\ncompute({FIRST!r})"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "DamagedFileError" in out.stderr and '"decimals": must be an integer' in out.stderr
    assert "bad operand" not in out.stderr


# --------------------------------------------------------------------------- unreadable data files

def test_a_folder_where_a_data_file_should_be(tmp_path):
    (tmp_path / "figures.json").mkdir()
    with pytest.raises(UnreadableFileError, match=r"the figures registry \(.*figures.json\) is a folder, not a file"):
        data.read_json(tmp_path / "figures.json", "the figures registry")


def test_an_unreadable_data_file(tmp_path, monkeypatch):
    file = tmp_path / "lab_model.json"
    file.write_text("{}")
    real = Path.read_bytes

    def refuse(self):
        if self == file:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(UnreadableFileError, match=r"lab_model.json\) cannot be read: permission denied; make it readable"):
        data.read_json(file, "the weight file of the lab model")
    assert isinstance(UnreadableFileError("x"), OSError)


# --------------------------------------------------------------------------- toy weight files

@pytest.mark.parametrize("field, value, message", [
    ("notes", ["a"], r"→ 'notes': must be an object of table name -> string"),
    ("notes", {"token_embedding.weight": 3}, r"→ 'notes': must be"),
    ("about", 7, r"→ 'about': must be a string"),
    ("config", "gpt", r"→ 'config': must be an object"),
    ("tables", [], r"→ 'tables': must be an object"),
])
def test_a_toy_weight_file_field_of_the_wrong_type_is_named(tmp_path, field, value, message):
    weights = json.loads(FIVE_TOKEN.weights_path.read_text(encoding="utf-8"))
    weights[field] = value
    path = tmp_path / "five_token_model.json"
    path.write_text(json.dumps(weights), encoding="utf-8")
    with pytest.raises(DamagedFileError, match=message) as err:
        FIVE_TOKEN.load(path)
    assert str(path) in str(err.value) and "git checkout -- data/five_token_model.json" in str(err.value)


# --------------------------------------------------------------------------- GPT-2

def tiny_tensors(dtype=torch.float32):
    torch.manual_seed(0)
    D, V, P, hidden = 8, 11, 6, 32
    shapes = {"wte.weight": (V, D), "wpe.weight": (P, D), "ln_f.weight": (D,), "ln_f.bias": (D,),
              "h.0.ln_1.weight": (D,), "h.0.ln_1.bias": (D,), "h.0.ln_2.weight": (D,), "h.0.ln_2.bias": (D,),
              "h.0.attn.c_attn.weight": (D, 3 * D), "h.0.attn.c_attn.bias": (3 * D,),
              "h.0.attn.c_proj.weight": (D, D), "h.0.attn.c_proj.bias": (D,),
              "h.0.mlp.c_fc.weight": (D, hidden), "h.0.mlp.c_fc.bias": (hidden,),
              "h.0.mlp.c_proj.weight": (hidden, D), "h.0.mlp.c_proj.bias": (D,)}
    return {name: torch.randn(shape).to(dtype) for name, shape in shapes.items()}


def checkpoint(folder: Path, tensors=None, config=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors or tiny_tensors(), str(folder / "model.safetensors"))
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder / "model.safetensors"


GOOD_CONFIG = {"n_layer": 1, "n_embd": 8, "n_head": 2, "vocab_size": 11, "n_positions": 6,
               "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}
CONFIG_DAMAGE = [
    ({"activation_function": "swish"}, r"activation_function 'swish' is not one"),
    ({"activation_function": None}, r"activation_function None is not one"),
    ({"n_head": 3}, r"n_embd=8 is not divisible by n_head=3"),
    ({"n_head": 0}, r"n_head must be an integer ≥ 1, got 0"),
    ({"layer_norm_epsilon": "1e-5"}, r"layer_norm_epsilon must be a finite number > 0, got '1e-5'"),
    ({"layer_norm_epsilon": "small"}, r"layer_norm_epsilon must be a finite number > 0"),
    ({"layer_norm_epsilon": -1}, r"layer_norm_epsilon must be a finite number > 0"),
    ({"n_layer": 2.9}, r"n_layer must be an integer ≥ 1, got 2.9"),
    ({"n_layer": "1"}, r"n_layer must be an integer ≥ 1, got '1'"),
    ({"n_layer": True}, r"n_layer must be an integer ≥ 1, got True"),
    ({"n_embd": None}, r"n_embd must be an integer ≥ 1, got None"),
]


@pytest.mark.parametrize("change, message", CONFIG_DAMAGE, ids=str)
def test_a_wrong_config_json_field_is_a_damaged_file_error_naming_it(tmp_path, change, message):
    file = checkpoint(tmp_path, config={**GOOD_CONFIG, **change})
    with pytest.raises(DamagedFileError, match=message) as err:
        load_gpt2(file)
    assert str(tmp_path / "config.json") in str(err.value)


def test_a_good_config_json_still_loads(tmp_path):
    model = load_gpt2(checkpoint(tmp_path, config=GOOD_CONFIG))
    assert model.config == gpt2_config(**TINY)
    assert config_from_hf_json(tmp_path / "config.json") == gpt2_config(**TINY)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.int64, torch.bool, torch.uint8,
                                   torch.float8_e4m3fn, torch.float8_e5m2], ids=str)
def test_a_tensor_that_is_not_floating_point_is_refused(tmp_path, dtype):
    tensors = tiny_tensors()
    tensors["h.0.mlp.c_fc.weight"] = tensors["h.0.mlp.c_fc.weight"].to(dtype)
    file = checkpoint(tmp_path, tensors)
    with pytest.raises(DamagedFileError, match=rf"tensor 'h.0.mlp.c_fc.weight' has dtype {dtype}"):
        load_gpt2(file, config=gpt2_config(**TINY))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64], ids=str)
def test_every_float_dtype_still_loads(tmp_path, dtype):
    tensors = tiny_tensors(dtype)
    model = load_gpt2(checkpoint(tmp_path, tensors), config=gpt2_config(**TINY))
    assert torch.equal(model.position_embedding.weight, tensors["wpe.weight"].float())


def test_a_tensor_with_and_without_the_transformer_prefix_is_refused(tmp_path):
    tensors = tiny_tensors()
    tensors["transformer.wpe.weight"] = tensors["wpe.weight"] + 1       # which one is GPT-2's?
    with pytest.raises(DamagedFileError, match=r"'wpe.weight' is there twice, with and without the 'transformer.' prefix"):
        load_gpt2(checkpoint(tmp_path, tensors), config=gpt2_config(**TINY))


def test_unreadable_weights_are_an_unreadable_file_error(tmp_path, monkeypatch):
    file = checkpoint(tmp_path)
    real_open = open

    def refuse(path, *args, **kwargs):
        if Path(path) == file:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", refuse)
    with pytest.raises(UnreadableFileError, match=r"GPT-2 weights file \(.*\) cannot be read: permission denied"):
        load_gpt2(file, config=gpt2_config(**TINY))


def test_an_unreadable_hugging_face_cache_is_an_unreadable_file_error(tmp_path, monkeypatch):
    from course_lib.gpt2.loader import find_weights
    cache = tmp_path / "hub"
    (cache / "models--openai-community--gpt2" / "snapshots").mkdir(parents=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv(WEIGHTS_ENV, raising=False)
    real_is_dir = Path.is_dir

    def refuse(self):
        if self.is_relative_to(cache):
            raise PermissionError(13, "Permission denied", str(self))
        return real_is_dir(self)

    monkeypatch.setattr(Path, "is_dir", refuse)
    with pytest.raises(UnreadableFileError, match=r"the Hugging Face cache .* cannot be searched"):
        find_weights()


def _failures(tmp_path):
    """(name, how to set it up) for every failure gpt2_or_message must turn into one line."""
    def config_case(change):
        return lambda mp: mp.setenv(WEIGHTS_ENV, str(checkpoint(tmp_path / "c", config={**GOOD_CONFIG, **change})))

    def tensors_case(edit):
        def setup(mp):
            tensors = tiny_tensors()
            edit(tensors)
            mp.setenv(WEIGHTS_ENV, str(checkpoint(tmp_path / "t", tensors, config=GOOD_CONFIG)))
        return setup

    def unreadable_file(mp):
        file = checkpoint(tmp_path / "u", config=GOOD_CONFIG)
        real_open = open
        mp.setattr("builtins.open", lambda p, *a, **k: (_ for _ in ()).throw(PermissionError(13, "Permission denied", str(p)))
                   if Path(p) == file else real_open(p, *a, **k))
        mp.setenv(WEIGHTS_ENV, str(file))

    def unreadable_cache(mp):
        cache = tmp_path / "hub"
        (cache / "models--openai-community--gpt2" / "snapshots").mkdir(parents=True)
        mp.setenv("HF_HUB_CACHE", str(cache))
        mp.delenv(WEIGHTS_ENV, raising=False)
        real_is_dir = Path.is_dir
        mp.setattr(Path, "is_dir", lambda self: (_ for _ in ()).throw(PermissionError(13, "Permission denied"))
                   if self.is_relative_to(cache) else real_is_dir(self))

    return {
        "unknown activation_function": config_case({"activation_function": "swish"}),
        "n_head not dividing n_embd": config_case({"n_head": 3}),
        "n_head 0": config_case({"n_head": 0}),
        "layer_norm_epsilon not a number": config_case({"layer_norm_epsilon": "small"}),
        "n_layer 2.9": config_case({"n_layer": 2.9}),
        "float8 tensor": tensors_case(lambda t: t.__setitem__("wpe.weight", t["wpe.weight"].to(torch.float8_e4m3fn))),
        "int tensor": tensors_case(lambda t: t.__setitem__("wpe.weight", t["wpe.weight"].to(torch.int32))),
        "prefixed twice": tensors_case(lambda t: t.__setitem__("transformer.wpe.weight", t["wpe.weight"].clone())),
        "unreadable weights": unreadable_file,
        "unreadable cache": unreadable_cache,
        "config.json is a folder": lambda mp: (mp.setenv(WEIGHTS_ENV, str(checkpoint(tmp_path / "d"))),
                                               (tmp_path / "d" / "config.json").mkdir()),
    }


@pytest.mark.parametrize("failure", sorted(_failures(Path("/unused"))))
def test_gpt2_or_message_turns_every_failure_into_one_line(tmp_path, monkeypatch, failure):
    _failures(tmp_path)[failure](monkeypatch)
    model, line = gpt2_or_message("show GPT-2's top five")
    assert model is None and line.startswith("[GPT-2 weights could not be loaded") and "\n" not in line
