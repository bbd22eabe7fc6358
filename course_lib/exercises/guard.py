"""What keeps a check safe to run on any function: a time limit, plain results, no leftover state.

Used by every exercise checker (``core.Check.call`` and ``core.run``), in the notebook and in the
grader (``course_lib.grading``). Not taught. Four guards:

* :func:`time_limit` — the learner's function gets ``seconds`` per call (SIGALRM, in the main
  thread of a Unix kernel; elsewhere no limit). A loop that never ends becomes one hint line.
* :func:`plain` — what the function returned, rebuilt from plain types (tensor, list, tuple,
  dict, str, bytes, int, float, bool, None), so a list whose ``==`` is always True, a str
  subclass or a tensor subclass cannot fool a comparison; anything else becomes an
  :class:`Opaque` stand-in named after its type, which every check rejects with a hint.
* :func:`isolated` — a check runs alone (one at a time per process) and leaves torch's default
  dtype, grad mode, the course's language and the torch / numpy / Python random generators as
  it found them, whatever the learner's function did to them.
* :func:`watch_calls` — notes a call, made while the learner's function runs, of the course's
  reference for that exercise or of the torch function the statement rules out ("from scratch"),
  by whichever door (``torch``, ``torch.nn.functional``, ``torch.special``, ``torch.ops.aten``).
  It runs in the learner's own process, so it catches a mistake, not a cheat: code that copies
  the course's source, or switches the watch off, is not seen (docs/instructors.md says which
  checks are enforced and which are honour-level).
"""
from __future__ import annotations

import contextlib
import random
import signal
import sys
import threading

import torch

CALL_SECONDS = 10.0            # per call of the learner's function, in the notebook
_LOCK = threading.RLock()      # one check at a time: the default dtype is process-wide
MAX_ITEMS = 2_000_000          # a returned structure larger than this is not read


class TimeLimit(BaseException):
    """The learner's function ran past its time limit (a BaseException: ``except Exception``
    in the learner's code does not swallow it)."""


class Ended(Exception):
    """The grader lost the submission's process while the function ran (it exited, crashed,
    hit a limit or sent something unreadable); the message says which."""


@contextlib.contextmanager
def time_limit(seconds: float | None = CALL_SECONDS):
    """Raise :class:`TimeLimit` in the running code after ``seconds`` (then every 0.5 s, so a
    bare ``except:`` cannot swallow it for good). No limit outside the main thread or without
    SIGALRM (Windows), or when ``seconds`` is None."""
    usable = (seconds is not None and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return

    def ring(signum, frame):
        raise TimeLimit

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.5)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def isolated():
    """Run a check alone, in float64 (as notebooks 02–06 compute), and put back what it or the
    learner's function changed: default dtype, grad mode, language, random generators."""
    import numpy as np
    from ..ui import language
    with _LOCK:
        dtype, grad, lang = torch.get_default_dtype(), torch.is_grad_enabled(), language.current_language()
        py_state, np_state = random.getstate(), np.random.get_state()
        with torch.random.fork_rng(devices=[]):
            torch.set_default_dtype(torch.float64)
            try:
                yield
            finally:
                torch.set_default_dtype(dtype)
                torch.set_grad_enabled(grad)
                language.set_language(lang)
                random.setstate(py_state)
                np.random.set_state(np_state)


class Opaque:
    """Stands in for a returned value the checks do not read (a generator, a custom object…)."""

    def __init__(self, kind: str):
        self.kind = kind

    def __repr__(self) -> str:
        return f"<{self.kind}>"


def opaque(kind: str) -> Opaque:
    """An :class:`Opaque` whose type is named ``kind``, so a hint says "returned a generator"."""
    return type(kind, (Opaque,), {})(kind)


def plain(value, _depth: int = 0, _budget=None):
    """``value`` rebuilt from plain types only (see the module's docstring)."""
    budget = _budget if _budget is not None else [MAX_ITEMS]
    budget[0] -= 1
    if budget[0] < 0 or _depth > 50:
        return opaque("structure too large or too deep")
    if value is None or type(value) in (bool, int, float, str, bytes):
        return value
    if isinstance(value, torch.Tensor):
        if type(value) not in (torch.Tensor, torch.nn.Parameter):
            return opaque(f"{type(value).__name__} (a tensor subclass)")
        with torch.no_grad():
            return torch.Tensor.detach(value).clone()
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.encode(value, "utf-8", "surrogatepass").decode("utf-8", "surrogatepass")
    if isinstance(value, bytes):
        return bytes(memoryview(value))
    if isinstance(value, (list, tuple)):
        items = list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value)
        out = [plain(item, _depth + 1, budget) for item in items]
        return out if isinstance(value, list) else tuple(out)
    if isinstance(value, dict):
        return {plain(k, _depth + 1, budget): plain(v, _depth + 1, budget) for k, v in dict.items(value)}
    return opaque(type(value).__name__)


# Per exercise, the course's own code a learner's function may not call: (path inside
# course_lib, qualified name or "*" for the whole module). And torch's compiled functions that
# a statement rules out ("without torch.softmax"), by name.
_COURSE = {
    "byte_table": [("tokens/bpe.py", "byte_to_char"), ("tokens/bpe.py", "bytes_to_chars")],
    "bpe_merge": [("tokens/bpe.py", "BPETokenizer.bpe"), ("tokens/bpe.py", "BPETokenizer.merge_steps"),
                  ("tokens/bpe.py", "BPETokenizer.merge_fast"), ("tokens/bpe.py", "BPETokenizer.encode")],
    "stream_decode": [("tokens/streaming.py", "*")],
    "one_hot_rows": [("model/embeddings.py", "*")],
    "embed": [("model/embeddings.py", "*"), ("model/gpt.py", "GPT.embed")],
    "last_scores": [("model/embeddings.py", "*")],
    "make_causal_mask": [("model/attention.py", "*")],
    "attention_head": [("model/attention.py", "attention_by_hand"), ("model/gpt.py", "CausalSelfAttention.forward"),
                       ("exercises/ch03_attention.py", "*")],
    "split_heads": [("model/gpt.py", "CausalSelfAttention.split_heads")],
    "layer_norm": [("model/attention.py", "*")],
    "mlp_forward": [("model/gpt.py", "MLP.forward")],
    "pre_norm_block": [("model/gpt.py", "Block.forward")],
    "one_logit": [("model/lm_head.py", "*")],
    "all_logits": [("model/lm_head.py", "*")],
    "head_parameters": [("model/lm_head.py", "*")],
    "stable_softmax": [("model/lm_head.py", "*")],
    "shift_targets": [("model/loss.py", "*")],
    "target_probs": [("model/loss.py", "*")],
    "cross_entropy": [("model/loss.py", "*")],
    "sgd_step": [("model/loss.py", "*")],
    "interval_draw": [("decoding/", "*")],
    "apply_temperature": [("decoding/", "*")],
    "top_k_filter": [("decoding/", "*")],
    "top_p_filter": [("decoding/", "*")],
    "min_p_filter": [("decoding/", "*")],
    "generate_cached": [("decoding/", "*")],
}
_TORCH = {"attention_head": {"scaled_dot_product_attention"},
          "layer_norm": {"layer_norm", "native_layer_norm"},
          "stable_softmax": {"softmax", "_softmax", "log_softmax", "_log_softmax", "softmin"},
          "cross_entropy": {"cross_entropy_loss", "cross_entropy", "nll_loss", "nll_loss_nd"}}
_CACHED: dict[str, list] = {}     # exercise -> its ruled-out course functions that lru_cache keeps
_ROOT = __file__.replace("\\", "/").rsplit("/exercises/", 1)[0] + "/"       # .../course_lib/


class Watch:
    """While active (``with watch_calls(name) as seen``), ``seen.first`` names the first ruled-out
    call the learner's function made, or stays None."""

    def __init__(self, name: str):
        self.name = name
        self.course = [(_ROOT + path, what) for path, what in _COURSE.get(name, [])]
        self.torch = _TORCH.get(name, set())
        self.first: str | None = None
        self.codes: dict = {}              # code object -> what it is if ruled out, else None

    def forget_cached(self) -> None:
        """Empty the cache of a ruled-out course function kept by ``functools.lru_cache``
        (``byte_to_char``): a cached call runs no Python code, so it would go unnoticed."""
        if self.name not in _CACHED:
            found = []
            for module in list(sys.modules.values()):
                path = (getattr(module, "__file__", None) or "").replace("\\", "/")
                if any(path.startswith(prefix) for prefix, _ in self.course):
                    found += [value for value in list(vars(module).values()) if hasattr(value, "cache_clear")
                              and getattr(getattr(value, "__wrapped__", None), "__code__", None) is not None
                              and self._ruled_out(value.__wrapped__.__code__)]
            _CACHED[self.name] = found
        for cached in _CACHED[self.name]:
            cached.cache_clear()

    def _ruled_out(self, code) -> str | None:
        path = code.co_filename.replace("\\", "/")
        for prefix, what in self.course:
            if path.startswith(prefix) and what in ("*", code.co_qualname):
                return f"course_lib's {code.co_qualname}"
        if self.torch and path.endswith("torch/nn/functional.py") and code.co_name in self.torch:
            return f"torch's {code.co_name}"
        return None

    def _hook(self, frame, event, arg):
        if event == "call":
            code = frame.f_code
            verdict = self.codes.get(code, False)
            if verdict is False:
                verdict = self.codes[code] = self._ruled_out(code)
            if verdict and self.first is None:
                self.first = verdict
            if self.torch and code.co_name == "__call__" and code.co_filename.replace("\\", "/").endswith("torch/_ops.py"):
                name = str(getattr(frame.f_locals.get("self"), "__name__", ""))     # torch.ops.aten.X.default
                if _torch_name(name) in self.torch and self.first is None:
                    self.first = f"torch's {name}"
        elif event == "c_call" and self.torch and _torch_name(getattr(arg, "__name__", None)) in self.torch and self.first is None:
            owner = getattr(arg, "__self__", None)
            module = getattr(arg, "__module__", None) or getattr(owner, "__name__", "") or ""
            if isinstance(owner, torch.Tensor) or str(module).startswith("torch"):
                self.first = f"torch's {arg.__name__}"


def _torch_name(name) -> str:
    """The name a compiled torch function is ruled out by: ``special_softmax`` (torch.special) is
    ``softmax``, ``native_layer_norm.default`` (an overload of torch.ops.aten) is
    ``native_layer_norm``, every ``_scaled_dot_product_…`` kernel is ``scaled_dot_product_attention``."""
    name = str(name or "").split(".")[0].removeprefix("special_")
    return "scaled_dot_product_attention" if "scaled_dot_product" in name else name


@contextlib.contextmanager
def watch_calls(name: str):
    """Note the first ruled-out call (see :class:`Watch`) made in this thread meanwhile."""
    watch = Watch(name)
    if not watch.course and not watch.torch:
        yield watch
        return
    watch.forget_cached()
    previous = sys.getprofile()
    sys.setprofile(watch._hook)
    try:
        yield watch
    finally:
        sys.setprofile(previous)
