"""Random-weight Hugging Face GPT-2 models for the equivalence tests (needs transformers)."""
from contextlib import nullcontext

import torch
import transformers

try:                                    # transformers 5
    from transformers.initialization import no_init_weights
except ImportError:
    try:                                # transformers 4
        from transformers.modeling_utils import no_init_weights
    except ImportError:
        no_init_weights = nullcontext


def random_hf_gpt2(sizes: dict, seed: int):
    """GPT2LMHeadModel with random weights, large enough that attention is far from uniform
    and every LayerNorm has its own scale and shift (so a swapped tensor changes the logits).
    Small embeddings (variance ~0.01) make the epsilon matter: LayerNorm divides by
    sqrt(variance + eps)."""
    torch.manual_seed(seed)
    config = transformers.GPT2Config(**sizes, attn_implementation="eager")
    with no_init_weights():             # every parameter is drawn below: not twice
        model = transformers.GPT2LMHeadModel(config).eval()
    model.tie_weights()                 # the output layer is the token table, as after a usual init
    assert model.lm_head.weight is model.transformer.wte.weight
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith((".ln_1.weight", ".ln_2.weight", "ln_f.weight")):
                p.copy_(1 + 0.1 * torch.randn_like(p))
            else:
                p.normal_(0.0, 0.1)
    return model
