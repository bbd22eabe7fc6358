"""Loading GPT-2 small's real weights into ``GPT(GPT2_SMALL_CONFIG)`` (``gpt2.config``).

Taught in notebooks 05 (lm_head: real GPT-2's five most likely tokens) and 07 (sampling: real
GPT-2's next tokens), where the weights are available; :func:`gpt2_or_none` and
:func:`no_weights_line` let a notebook cell say what it would show when they are not.

Errors (``course_lib.data``): no file → ``MissingFileError``; a download whose SHA-256 is wrong
→ ``ChecksumError``; a damaged file or one that does not fit the config → ``DamagedFileError``.

Where the weights come from (:func:`find_weights` tries them in this order):

1. a path you pass (the ``model.safetensors`` file, or a folder holding it),
2. the environment variable ``COURSE_GPT2_WEIGHTS`` (same meaning; a path or variable that
   points nowhere is an error, never silently replaced by another copy),
3. when neither is given, the local Hugging Face cache (``~/.cache/huggingface/hub`` or ``$HF_HUB_CACHE`` /
   ``$HF_HOME``), under ``openai-community/gpt2`` or its older name ``gpt2``,
4. a download from the Hugging Face Hub, only when you ask for it: ``load_gpt2(download=True)``
   or ``python -m course_lib.gpt2 --download``. The file (548 MB) is checked against its
   published SHA-256 before it is used.

How Hugging Face names map onto ours (``h.{i}`` is block ``i``; HF's ``Conv1D`` stores its
weight as (in, out), the transpose of ``nn.Linear``'s (out, in)):

=====================  ======================================  ==========================
HF name                ours                                    note
=====================  ======================================  ==========================
wte.weight             token_embedding.weight (= lm_head)      (V, D), tied output table
wpe.weight             position_embedding.weight               (1024, D)
h.i.ln_1.*             blocks.i.ln_1.*
h.i.attn.c_attn.*      blocks.i.attn.query / key / value       (D, 3D) split in 3, transposed
h.i.attn.c_proj.*      blocks.i.attn.output                    transposed
h.i.ln_2.*             blocks.i.ln_2.*
h.i.mlp.c_fc.*         blocks.i.mlp.up                         transposed
h.i.mlp.c_proj.*       blocks.i.mlp.down                       transposed
ln_f.*                 ln_f.*
=====================  ======================================  ==========================
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import torch

from ..data import ChecksumError, DamagedFileError, MissingFileError, UnreadableFileError, sha256_of, unreadable
from ..model import GPT, GPTConfig
from .checkpoint import (HF_OLD_REPO_ID, HF_REPO_ID, HF_REVISION, WEIGHTS_BYTES, WEIGHTS_ENV, WEIGHTS_FILENAME,
                         WEIGHTS_SHA256, check_dtypes, check_finite, how_to_replace, read_safetensors)
from .config import GPT2_SMALL_CONFIG, config_from_hf_json



# --------------------------------------------------------------------------- finding the file

def hf_cache_dirs() -> list[Path]:
    """The Hugging Face hub cache on this machine, chosen the way huggingface_hub chooses it.

    ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``$XDG_CACHE_HOME/huggingface/hub``, else
    ``~/.cache/huggingface/hub``. (Point ``HF_HUB_CACHE`` at an empty folder to hide a cached
    copy, for example when checking the notebooks' weight-free outputs.)
    """
    if os.environ.get("HF_HUB_CACHE"):
        return [Path(os.environ["HF_HUB_CACHE"])]
    if os.environ.get("HF_HOME"):
        return [Path(os.environ["HF_HOME"]) / "hub"]
    base = Path(os.environ["XDG_CACHE_HOME"]) if os.environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return [base / "huggingface" / "hub"]


def cached_weight_files(cache_dirs: list[Path] | None = None) -> list[Path]:
    """``model.safetensors`` files of GPT-2 snapshots in the Hugging Face cache (pinned first)."""
    found = []
    for cache in cache_dirs if cache_dirs is not None else hf_cache_dirs():
        for repo in (HF_REPO_ID, HF_OLD_REPO_ID):
            snapshots = cache / ("models--" + repo.replace("/", "--")) / "snapshots"
            pinned = snapshots / HF_REVISION / WEIGHTS_FILENAME
            try:
                others = sorted(snapshots.glob(f"*/{WEIGHTS_FILENAME}")) if snapshots.is_dir() else []
                for f in [pinned] + others:
                    if f.is_file() and f not in found:
                        found.append(f)
            except OSError as err:                # no permission to look inside the cache
                raise UnreadableFileError(
                    f"the Hugging Face cache {cache} cannot be searched for GPT-2's weights "
                    f"({err.strerror or err}: {err.filename or snapshots}); make it readable, point "
                    f"HF_HUB_CACHE at another folder, or set {WEIGHTS_ENV} to the weights file") from None
    return found


def how_to_get_weights() -> str:
    return (
        "To use real GPT-2 small, do one of:\n"
        f"  * download it (548 MB, checked by SHA-256):  python -m course_lib.gpt2 --download\n"
        f"    or in Python:  load_gpt2(download=True)\n"
        f"  * or fetch https://huggingface.co/{HF_REPO_ID}/resolve/{HF_REVISION}/{WEIGHTS_FILENAME}\n"
        f"    yourself and point the course at it:  export {WEIGHTS_ENV}=/path/to/{WEIGHTS_FILENAME}")


def find_weights(path: str | os.PathLike | None = None,
                 cache_dirs: list[Path] | None = None) -> Path:
    """Return the path of GPT-2's ``model.safetensors`` or raise :class:`MissingFileError`.

    Never downloads. ``path`` may be the file or a folder holding it; without it the
    environment variable ``COURSE_GPT2_WEIGHTS`` (same meaning), and only when that is not set
    the Hugging Face cache. A path or variable that points nowhere is an error.
    """
    looked = []
    if path is None and os.environ.get(WEIGHTS_ENV):
        path, source = os.environ[WEIGHTS_ENV], f"${WEIGHTS_ENV}"
    else:
        source = "the path you gave"
    if path is not None:          # a path someone chose must be right: no silent fallback
        try:
            file = Path(path) / WEIGHTS_FILENAME if Path(path).is_dir() else Path(path)
            if file.is_file():
                return file
        except OSError as err:                    # e.g. no permission to enter its folder
            raise unreadable(path, f"GPT-2 weights ({source})", err) from None
        raise MissingFileError(f"GPT-2 weights not found.\nLooked at:\n  {source}: {file} "
                              f"(no such file)\n" + how_to_get_weights())
    looked.append(f"${WEIGHTS_ENV}: not set")
    cached = cached_weight_files(cache_dirs)
    if cached:
        return cached[0]
    for cache in cache_dirs if cache_dirs is not None else hf_cache_dirs():
        looked.append(f"Hugging Face cache: {cache}/models--{HF_REPO_ID.replace('/', '--')} "
                      f"(and models--{HF_OLD_REPO_ID}): no {WEIGHTS_FILENAME}")
    raise MissingFileError("GPT-2 weights not found (nothing is downloaded unless you ask).\n"
                          "Looked at:\n  " + "\n  ".join(looked) + "\n" + how_to_get_weights())


def download_weights(cache_dir: str | os.PathLike | None = None) -> Path:
    """Download GPT-2's ``model.safetensors`` (pinned revision) and verify its SHA-256.

    Uses ``huggingface_hub`` (progress bar included); the file lands in the Hugging Face cache
    (or ``cache_dir``), where :func:`find_weights` finds it next time.
    """
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        raise ImportError("downloading needs the huggingface_hub package: "
                          "pip install huggingface_hub (or fetch the file by hand:\n"
                          + how_to_get_weights() + ")") from None
    file = Path(hf_hub_download(HF_REPO_ID, WEIGHTS_FILENAME, revision=HF_REVISION,
                                cache_dir=cache_dir))
    checksum = sha256_of(file)
    if checksum != WEIGHTS_SHA256:
        raise ChecksumError(f"{file} has SHA-256 {checksum}, expected {WEIGHTS_SHA256}: "
                      f"the download is damaged; delete it and try again")
    print(f"GPT-2 weights verified (SHA-256 {checksum[:12]}…): {file}")
    return file


# --------------------------------------------------------------------------- name mapping

def hf_to_course_state_dict(tensors: dict[str, torch.Tensor], config: GPTConfig) -> dict[str, torch.Tensor]:
    """Rename and reshape a Hugging Face GPT-2 state dict into ``GPT``'s names.

    Accepts the official file's names (``h.0.attn.c_attn.weight``) and those written by
    ``GPT2LMHeadModel.save_pretrained`` (``transformer.h.0...``). The attention mask buffers
    (``attn.bias``, ``attn.masked_bias``) are not weights and are skipped.

    No weight is copied: the transposes and the query / key / value thirds are *views* of the
    file's tensors (``nn.Linear`` multiplies by ``weight.T``, which is then the file's own
    (in, out) layout), so the loaded model holds each number once.
    """
    hf = {}
    for name, t in tensors.items():
        short = name.removeprefix("transformer.")
        if short.endswith((".attn.bias", ".attn.masked_bias")):
            continue
        if short in hf:                           # both "h.0..." and "transformer.h.0...": which one?
            raise ValueError(f"GPT-2 weights: tensor {short!r} is there twice, with and without the "
                             f"'transformer.' prefix; a checkpoint holds each weight once")
        hf[short] = t
    D = config.n_embd
    out = {}

    def take(name: str, shape: tuple) -> torch.Tensor:
        if name not in hf:
            raise KeyError(f"GPT-2 weights: tensor {name!r} is missing")
        t = hf.pop(name)
        if tuple(t.shape) != shape:
            raise ValueError(f"GPT-2 weights: {name} has shape {tuple(t.shape)}, "
                             f"the configuration needs {shape}")
        return t.float()

    out["token_embedding.weight"] = take("wte.weight", (config.vocab_size, D))
    out["position_embedding.weight"] = take("wpe.weight", (config.n_positions, D))
    for i in range(config.n_layer):
        h, ours = f"h.{i}.", f"blocks.{i}."
        for ln in ("ln_1", "ln_2"):
            out[ours + ln + ".weight"] = take(h + ln + ".weight", (D,))
            out[ours + ln + ".bias"] = take(h + ln + ".bias", (D,))
        w = take(h + "attn.c_attn.weight", (D, 3 * D))          # (in, out) = (D, 3D)
        b = take(h + "attn.c_attn.bias", (3 * D,))
        for part, w_part, b_part in zip(("query", "key", "value"), w.split(D, dim=1), b.split(D)):
            out[ours + f"attn.{part}.weight"] = w_part.t()      # (D, D) as (out, in): a view
            out[ours + f"attn.{part}.bias"] = b_part
        conv1d = {"attn.c_proj": ("attn.output", D, D),
                  "mlp.c_fc": ("mlp.up", D, config.mlp_hidden),
                  "mlp.c_proj": ("mlp.down", config.mlp_hidden, D)}
        for hf_name, (our_name, n_in, n_out) in conv1d.items():
            out[ours + our_name + ".weight"] = take(h + hf_name + ".weight", (n_in, n_out)).t()   # a view
            out[ours + our_name + ".bias"] = take(h + hf_name + ".bias", (n_out,))
    out["ln_f.weight"] = take("ln_f.weight", (D,))
    out["ln_f.bias"] = take("ln_f.bias", (D,))
    head = hf.pop("lm_head.weight", None)                    # save_pretrained omits the tied copy
    if head is not None and not torch.equal(head.float(), out["token_embedding.weight"]):
        raise ValueError("GPT-2 weights: lm_head.weight differs from wte.weight, but GPT-2 ties them")
    if hf:
        raise ValueError(f"GPT-2 weights: unexpected tensors {sorted(hf)[:5]} "
                         f"(is this a GPT-2 checkpoint with {config.n_layer} layers?)")
    out["lm_head.weight"] = out["token_embedding.weight"]
    return out


def load_gpt2(path: str | os.PathLike | None = None, *, config: GPTConfig | None = None,
              download: bool = False) -> GPT:
    """GPT-2 with Hugging Face weights, as a ``course_lib.model.GPT`` in eval mode.

    ``path``: the ``model.safetensors`` file or its folder (default: :func:`find_weights`).
    ``config``: defaults to the ``config.json`` beside the file, else GPT-2 small.
    ``download=True``: if no local copy is found, fetch the official file (needs internet).

    Raises :class:`MissingFileError` when there is no file, :class:`DamagedFileError` when the
    file (or its config.json) is damaged or does not fit the configuration: truncated, not a
    safetensors file, an HTML page, a missing tensor, a wrong shape. Both messages name the
    file and say what to do. Any float dtype loads (float16 and bfloat16 become float32);
    integer, boolean and float8 tensors are refused (``checkpoint.check_dtypes``).
    """
    try:
        file = find_weights(path)
    except MissingFileError:
        if not download or path is not None or os.environ.get(WEIGHTS_ENV):
            raise                 # never download over a path someone chose
        file = download_weights()
    if config is None:
        beside = file.parent / "config.json"
        config = config_from_hf_json(beside) if beside.exists() else GPT2_SMALL_CONFIG
    try:
        tensors = read_safetensors(file)
        check_dtypes(tensors, file)
        check_finite(tensors, file)
        state = hf_to_course_state_dict(tensors, config)
    except (KeyError, ValueError) as err:
        if isinstance(err, DamagedFileError):
            raise
        what = str(err.args[0] if err.args else err).removeprefix("GPT-2 weights: ")
        raise DamagedFileError(
            f"GPT-2 weights file {file} does not match the configuration it is loaded with "
            f"(n_layer={config.n_layer}, n_embd={config.n_embd}, vocab_size={config.vocab_size}, "
            f"n_positions={config.n_positions}): {what}. If the file is another GPT-2 size, put "
            f"its config.json beside it or pass config= to load_gpt2. If it should be GPT-2 "
            f"small, it is damaged. {how_to_replace(file)}") from None
    with torch.device("meta"):            # no random init: every tensor comes from the file
        model = GPT(config)
    model.load_state_dict(state, strict=True, assign=True)
    model.lm_head.weight = model.token_embedding.weight      # keep one shared table
    return model.eval()




def gpt2_or_none() -> GPT | None:
    """Real GPT-2 small if its weights are on this machine (never downloads), else None.

    If ``COURSE_GPT2_WEIGHTS`` is set but wrong, the error is raised rather than hidden.
    """
    try:
        return load_gpt2()
    except MissingFileError:
        if os.environ.get(WEIGHTS_ENV):     # the learner pointed at a file that is not there
            raise
        return None


def gpt2_or_message(what: str) -> tuple[GPT | None, str | None]:
    """For a notebook cell: ``(GPT-2, None)``, or ``(None, one line)`` that says why not —
    the fixed :func:`no_weights_line` when the weights are simply not here, or what was found
    where and what to do when ``COURSE_GPT2_WEIGHTS`` is wrong or the file (or its config.json)
    is damaged. Never raises for those, so the rest of the notebook and its checks still run."""
    try:
        model = gpt2_or_none()
    except (MissingFileError, ChecksumError, DamagedFileError, OSError) as err:   # OSError: unreadable
        first = " ".join(str(err).split())
        return None, (f"[GPT-2 weights could not be loaded, so this cell skips: {first[:400]} — "
                      f"fix or unset {WEIGHTS_ENV} (see the README), then run the notebook again.]")
    if model is None:
        return None, no_weights_line(what)
    return model, None


def no_weights_line(what: str) -> str:
    """The one fixed line a notebook cell prints when GPT-2's weights are absent."""
    return (f"[GPT-2 weights not found: this cell would {what}. Get them with "
            f"`python -m course_lib.gpt2 --download` or set {WEIGHTS_ENV}; see the README.]")
