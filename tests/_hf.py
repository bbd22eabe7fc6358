"""Random-weight Hugging Face GPT-2 models for the equivalence tests (needs transformers)."""
import torch
import transformers


def random_hf_gpt2(sizes: dict, seed: int):
    """GPT2LMHeadModel with random weights, large enough that attention is far from uniform
    and every LayerNorm has its own scale and shift (so a swapped tensor changes the logits).
    Small embeddings (variance ~0.01) make the epsilon matter: LayerNorm divides by
    sqrt(variance + eps)."""
    torch.manual_seed(seed)
    config = transformers.GPT2Config(**sizes, attn_implementation="eager")
    model = transformers.GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith((".ln_1.weight", ".ln_2.weight", "ln_f.weight")):
                p.copy_(1 + 0.1 * torch.randn_like(p))
            else:
                p.normal_(0.0, 0.1)
    return model
