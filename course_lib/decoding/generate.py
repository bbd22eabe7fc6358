"""The generation loop: last row of logits → rule → one id → append → repeat.

Taught in notebook 07 (sampling), which writes the loop out by hand first. ``generate`` is THE
loop of the course: the toy models, the GPT-2 figures, the KV-cache benchmark and the comparison
with transformers (tests/test_gpt2_reference.py) all run it:

    ids → model → logits of the last row → a rule picks one id → append it
        → stop at the end id or at the length limit, otherwise run again

With ``use_cache=True`` (the default) the model keeps a KV cache: the prompt runs once, then
each step feeds only the one new id, and attention reads the cached keys and values of the
earlier positions. The causal mask is what makes this exact: earlier rows never look at later
tokens, so their outputs (and their keys and values) do not change when a token is appended.

Each step's row of logits is kept only when asked (``record_logits=True``; GPT-2's has 50,257).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from ..tokens.ids import check_id, check_ids
from ..ui import language
from .checks import check_logits, check_u
from .draw import check_generator
from .pipeline import SamplingRule
from .probs import greedy_id


@dataclass
class GenerationStep:
    """One turn of the loop: the id it appended (and the last row of logits it read, if recorded)."""
    token_id: int                # the id appended
    logits: list[float] | None = None    # (V,) the last row the rule saw (``record_logits=True``)
    u: float | None = None       # the uniform number of the draw (None for greedy)
    text: str = ""               # what the streaming decoder showed after this id


@dataclass
class Generation:
    """The result of :func:`generate`."""
    ids: list[int]                             # prompt + new ids
    new_ids: list[int]
    stopped_by: str                            # "end id" or "length"
    steps: list[GenerationStep] = field(default_factory=list)
    text: str = ""                             # everything the decoder showed

    def why_stopped(self) -> str:
        """Why the loop stopped, in the notebook's language ("end id" / "选中了结束 id")."""
        return language.text(f"generate.stopped_by.{self.stopped_by}")


def greedy_choice(logits, step: int):
    """A chooser for :func:`generate`: the argmax (ties → smaller id), no random number.
    A tensor row stays a tensor (``torch.argmax`` also picks the first of equal values)."""
    if isinstance(logits, torch.Tensor):
        best = int(torch.argmax(logits))        # a NaN counts as the largest value for argmax
        if logits.dim() != 1 or not math.isfinite(logits[best]):
            check_logits(logits)                # raises: NaN, +inf or all −inf, naming it
        return best, None
    return greedy_id(logits), None


class RuleChoice:
    """A chooser for :func:`generate`: apply a :class:`SamplingRule`, draw u, pick the interval.

    u comes from ``us`` (a list, one per step: reproducible by hand, as in the lab's
    u = 0.5 / u = 0.8) or else from ``torch.rand`` with a seeded ``torch.Generator``.
    """

    def __init__(self, rule: SamplingRule, generator: torch.Generator | None = None, us=None):
        if not isinstance(rule, SamplingRule):
            raise ValueError(f"rule must be a SamplingRule, got {rule!r}")
        if generator is None and us is None:
            raise ValueError("generator or us is needed: a draw without a seed is not reproducible")
        if us is not None:
            if isinstance(us, (str, bytes)):
                raise ValueError(f"us must be a list of numbers in [0, 1), one per step, got {us!r}")
            us = [check_u(u) for u in us]              # "0.5" is text, not a number: refused
        elif generator is not None:
            check_generator(generator)
        self.rule, self.generator, self.us = rule, generator, us

    def __call__(self, logits, step: int):
        if self.us is not None:
            if step >= len(self.us):
                raise ValueError(f"us has {len(self.us)} numbers, step {step} needs one more")
            u = self.us[step]
        else:
            u = torch.rand((), generator=self.generator, dtype=torch.float64).item()
        return self.rule.choose(logits, u), u


def check_prompt(model, prompt_ids, max_new_tokens: int) -> list[int]:
    """The prompt as a list of ints (one sequence: a list, a 1-D integer tensor or a [1, T] one);
    ``max_new_tokens`` ≥ 1 and within the position table."""
    shape = tuple(getattr(prompt_ids, "shape", ()))
    if len(shape) == 2 and shape[0] == 1:
        prompt_ids = prompt_ids[0]                      # [1, T]: one sequence
    elif len(shape) >= 2 or (isinstance(prompt_ids, (list, tuple)) and len(prompt_ids) > 0
                             and len(getattr(prompt_ids[0], "shape", ())) + isinstance(prompt_ids[0], (list, tuple)) > 0):
        raise ValueError(f"prompt_ids must be one sequence of ids, got a batch"
                         f"{' of shape ' + str(shape) if shape else ''}: generate runs one prompt "
                         f"at a time (call it once per row)")
    ids = check_ids(prompt_ids, "prompt_ids")
    if not ids:
        raise ValueError("prompt_ids is empty: give at least one id")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an integer ≥ 1, got {max_new_tokens!r}")
    room = model.config.n_positions - len(ids)
    if max_new_tokens > room:
        raise ValueError(f"max_new_tokens={max_new_tokens} does not fit: the prompt has {len(ids)} "
                         f"ids and the position table {model.config.n_positions} rows")
    return ids


@torch.inference_mode()
def generate(model, prompt_ids, max_new_tokens: int, choose=greedy_choice, end_id: int | None = None,
             decoder=None, use_cache: bool = True, on_step=None, record_logits: bool = False) -> Generation:
    """Run the loop for at most ``max_new_tokens`` new ids; stop early when ``end_id`` is picked.

    ``choose(logits_row, step) -> (id, u)`` is the rule (:func:`greedy_choice`, a
    :class:`RuleChoice`, or your own). ``decoder``: an object with ``push(id) -> str`` (e.g.
    ``tokenizer.StreamingDecoder``); every new id except the end id is pushed and the text it
    releases is kept per step. ``on_step(step)`` is called after each step (for printing as it
    streams). ``use_cache=False`` re-runs the whole sequence each step (same ids, more work). Either way
    the output layer runs on the last position only (``model(..., last_only=True)``).
    ``record_logits=True`` keeps each step's row of logits as a list in ``steps[t].logits``.
    """
    ids = check_prompt(model, prompt_ids, max_new_tokens)
    if end_id is not None:
        end_id = check_id(end_id, "end_id")             # 1.0 is not an id: refused, not compared
    cache = model.new_cache(len(ids) + max_new_tokens) if use_cache else None   # room made once
    # last_only: the output layer runs on the last position only, the one row the rule reads
    logits = model(torch.tensor([ids]), cache=cache, last_only=True)   # (1, 1, V): the prompt, once
    steps, stopped_by = [], "length"
    for step in range(max_new_tokens):
        row = logits[0, -1]                                     # (V,) the last row
        token_id, u = choose(row, step)
        token_id = check_id(token_id, f"the id chosen at step {step}")
        if not 0 <= token_id < row.shape[-1]:
            raise ValueError(f"the id chosen at step {step} is {token_id}, outside the vocabulary "
                             f"0..{row.shape[-1] - 1} (check the choose function)")
        ids.append(token_id)
        is_end = end_id is not None and token_id == end_id
        text = decoder.push(token_id) if decoder is not None and not is_end else ""
        record = GenerationStep(token_id=int(token_id), logits=row.tolist() if record_logits else None,
                                u=u, text=text)
        steps.append(record)
        if on_step is not None:
            on_step(record)
        if is_end:
            stopped_by = "end id"
            break
        if step + 1 == max_new_tokens:
            break                                               # no need to run the model again
        if use_cache:
            logits = model(torch.tensor([[token_id]]), cache=cache)   # (1, 1, V): one new row
        else:
            logits = model(torch.tensor([ids]), last_only=True)   # (1, 1, V): everything again
    new_ids = ids[len(ids) - len(steps):]
    return Generation(ids=ids, new_ids=new_ids, stopped_by=stopped_by, steps=steps,
                      text="".join(s.text for s in steps))
