"""Models for the Task 7 tests: the given Llama built from layers written another way, the same function written
outside the Llama's layout, and models that must fail the check although their bits per byte alone would pass (one
reads the future, one looks the held-out text up)."""
import json

import torch
import torch.nn as nn
import torch.nn.functional as F

from course.registry import assignment
from course_lib import llm as llm_defaults

from .layer_variants import RsqrtRMSNorm, SequentialGateSwiGLU

NAMES = {"attention.q_proj", "attention.k_proj", "attention.v_proj", "attention.o_proj", "feedforward.gate_proj",
         "feedforward.up_proj", "feedforward.down_proj"}


class OtherLlama(nn.Module):
    """The given Llama's function written independently: one fused query/key/value matrix, RoPE as complex products,
    F.rms_norm, SDPA's own causal mask and key/value grouping; weights copied from a trained Llama's state_dict."""

    def __init__(self, state, num_heads, num_kv_heads, num_layers, max_len, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.max_len = num_heads, num_kv_heads, max_len
        self.embedding = nn.Parameter(state["token_embedding.weight"].clone())  # (V, D), the head too
        self.head_dim = self.embedding.size(1) // num_heads
        self.layers = nn.ModuleList()
        for i in range(num_layers):
            self.layers.append(self.layer(state, f"blocks.{i}."))
        self.final = nn.Parameter(state["final_norm.weight"].clone())  # (D,)
        theta = base ** (-torch.arange(0, self.head_dim, 2, dtype=torch.float64) / self.head_dim)  # (hd / 2,)
        self.register_buffer("turns", torch.polar(torch.ones(max_len, len(theta), dtype=torch.float64),
                                                  torch.arange(max_len)[:, None] * theta).to(torch.complex64))

    @staticmethod
    def layer(state, prefix):
        """One block's weights from state's keys under prefix, the query, key and value matrices fused."""
        get = lambda name: nn.Parameter(state[f"{prefix}{name}.weight"].clone())
        layer = nn.ParameterDict({name.replace(".", "_"): get(name) for name in NAMES})
        layer["qkv"] = nn.Parameter(torch.cat([layer.pop(f"attention_{n}_proj") for n in "qkv"]))  # (D + 2 kv, D)
        layer["norm1"], layer["norm2"] = get("attention_norm"), get("feedforward_norm")
        return layer

    def rotate(self, x):
        """x (B, H, L, hd) -> pairs (2i, 2i + 1) as complex numbers times e^{i t theta_i}."""
        pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2).contiguous())  # (B, H, L, hd / 2)
        return torch.view_as_real(pairs * self.turns[:x.size(2)]).flatten(-2)  # (B, H, L, hd)

    def attend(self, layer, x):
        batch, length, dim = x.shape
        kv = self.num_kv_heads * self.head_dim
        query, key, value = (x @ layer["qkv"].T).split([dim, kv, kv], dim=-1)
        split = lambda t: t.unflatten(-1, (-1, self.head_dim)).transpose(1, 2)  # (B, L, n hd) -> (B, n, L, hd)
        out = F.scaled_dot_product_attention(self.rotate(split(query)), self.rotate(split(key)), split(value),
                                             is_causal=True, enable_gqa=True)  # (B, H, L, hd)
        return out.transpose(1, 2).reshape(batch, length, dim) @ layer["attention_o_proj"].T

    def forward(self, tokens, cache=None):
        x = F.embedding(tokens, self.embedding)  # (B, L, D)
        norm = lambda x, weight: F.rms_norm(x, weight.shape, weight, eps=1e-6)
        for layer in self.layers:
            x = x + self.attend(layer, norm(x, layer["norm1"]))
            h = norm(x, layer["norm2"])
            x = x + (F.silu(h @ layer["feedforward_gate_proj"].T) * (h @ layer["feedforward_up_proj"].T)) \
                @ layer["feedforward_down_proj"].T
        return norm(x, self.final) @ self.embedding.T, None  # (B, L, V)


def other_llama(trained):
    """OtherLlama holding the weights of trained (a Llama of course_lib.llm.MODEL's sizes)."""
    config = llm_defaults.MODEL
    return OtherLlama(trained.state_dict(), config["num_heads"], config["num_kv_heads"], config["num_layers"],
                      config["max_len"]).eval()


def with_weights(model, trained):
    """model, holding trained's weights (the same parameter names), in eval mode."""
    model.load_state_dict(trained.state_dict())
    return model.eval()


def future_reader(ref, trained, scale=20.0):
    """The given Llama with trained's weights, whose logits at position t also favour the token at t + 1."""
    class FutureReader(ref["Llama"]):
        def forward(self, tokens, cache=None):
            logits, new_cache = super().forward(tokens, cache)  # (B, L, V)
            following = F.one_hot(tokens.roll(-1, dims=1), logits.size(-1)).to(logits.dtype)  # (B, L, V)
            return logits + scale * following, new_cache

    return with_weights(FutureReader(**llm_defaults.MODEL), trained)


def text_lookup(ref, trained, ids):
    """The given Llama with trained's weights, causal, whose forward adds bigram log-probabilities counted on the
    scored text itself (a buffer, not a weight): re-drawn weights keep the bits per byte it looks up."""
    vocab_size = llm_defaults.MODEL["vocab_size"]
    ids = torch.as_tensor(ids)
    counts = torch.full((vocab_size, vocab_size), 1e-3).index_put_((ids[:-1], ids[1:]), torch.tensor(1.0),
                                                                  accumulate=True)  # (V, V)

    class TextLookup(ref["Llama"]):
        def __init__(self, **config):
            super().__init__(**config)
            self.register_buffer("table", (counts / counts.sum(-1, keepdim=True)).log())  # (V, V)

        def forward(self, tokens, cache=None):
            logits, new_cache = super().forward(tokens, cache)  # (B, L, V)
            return logits.log_softmax(-1) * 0.1 + self.table[tokens], new_cache

    model = TextLookup(**llm_defaults.MODEL)
    model.load_state_dict(trained.state_dict(), strict=False)  # all but the table
    return model.eval()


def einsum_gqa(rotary_class):
    """GroupedQueryAttention written another way: projections created in another order, the query heads viewed as
    (kv head, group) and contracted with einsum, the mask from position comparisons."""
    class EinsumGQA(nn.Module):
        def __init__(self, embed_dim, num_heads, num_kv_heads, max_len):
            super().__init__()
            self.num_heads, self.num_kv_heads, self.head_dim = num_heads, num_kv_heads, embed_dim // num_heads
            self.o_proj = nn.Linear(embed_dim, embed_dim, bias=False)
            self.v_proj = nn.Linear(embed_dim, num_kv_heads * self.head_dim, bias=False)
            self.k_proj = nn.Linear(embed_dim, num_kv_heads * self.head_dim, bias=False)
            self.q_proj = nn.Linear(embed_dim, embed_dim, bias=False)
            self.rotary = rotary_class(self.head_dim, max_len)

        def forward(self, x, cache=None):
            batch, length, dim = x.shape
            past = 0 if cache is None else cache[0].shape[-2]
            split = lambda t, n: t.view(batch, length, n, self.head_dim).transpose(1, 2)  # (B, n, L, hd)
            query = self.rotary(split(self.q_proj(x), self.num_heads), offset=past)
            key = self.rotary(split(self.k_proj(x), self.num_kv_heads), offset=past)
            value = split(self.v_proj(x), self.num_kv_heads)
            if cache is not None:
                key, value = torch.cat([cache[0], key], dim=2), torch.cat([cache[1], value], dim=2)
            query = query.reshape(batch, self.num_kv_heads, -1, length, self.head_dim)  # (B, H_kv, G, L, hd)
            scores = torch.einsum("bkgqd,bktd->bkgqt", query, key) * self.head_dim ** -0.5
            positions = torch.arange(past + length, device=x.device)
            later = positions[None, :] > positions[past:, None]  # (L, L_all): keys after the query
            weights = scores.masked_fill(later, float("-inf")).softmax(dim=-1)
            out = torch.einsum("bkgqt,bktd->bkgqd", weights, value).reshape(batch, self.num_heads, length, -1)
            return self.o_proj(out.transpose(1, 2).reshape(batch, length, dim)), (key, value)

    return EinsumGQA


def given_llama_cell():
    """The source of the notebook's given Llama cell (grade_id provided_llama)."""
    cells = json.loads(assignment("llm").source_notebook.read_text())["cells"]
    return next("".join(cell["source"]) for cell in cells
                if cell["metadata"].get("nbgrader", {}).get("grade_id") == "provided_llama")


def llama_of(ref, **layers):
    """The given Llama class built from the reference namespace's layers with some replaced (RMSNorm=..., ...)."""
    namespace = {**ref, **layers}
    exec(compile(given_llama_cell(), "<the given Llama>", "exec"), namespace)
    return namespace["Llama"]


def variant_llama(ref, trained):
    """The given Llama built of valid layers written another way, holding trained's weights."""
    Llama = llama_of(ref, RMSNorm=RsqrtRMSNorm, SwiGLU=SequentialGateSwiGLU,
                     GroupedQueryAttention=einsum_gqa(ref["RotaryEmbedding"]))
    return with_weights(Llama(**llm_defaults.MODEL), trained)
