"""Models for the Task 7 tests: the trained Llama written another way, and models that must fail the check although
their bits per byte alone would pass (one reads the future, one looks the held-out text up)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_lib import llm as llm_defaults

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


class FutureReader(nn.Module):
    """A trained model whose logits at position t also favour the token at t + 1: it reads the answer."""

    def __init__(self, inner, scale=20.0):
        super().__init__()
        self.inner, self.scale = inner, scale

    def forward(self, tokens, cache=None):
        logits, new_cache = self.inner(tokens)  # (B, L, V)
        following = F.one_hot(tokens.roll(-1, dims=1), logits.size(-1)).to(logits.dtype)  # (B, L, V)
        return logits + self.scale * following, new_cache


class TextLookup(nn.Module):
    """Causal, but its forward adds bigram log-probabilities counted on the scored text itself (a buffer): its bits per
    byte come from the text it looks up, not from weights, so re-drawn weights keep them."""

    def __init__(self, inner, ids, vocab_size):
        super().__init__()
        self.inner = inner
        ids = torch.as_tensor(ids)
        counts = torch.full((vocab_size, vocab_size), 1e-3).index_put_((ids[:-1], ids[1:]), torch.tensor(1.0),
                                                                      accumulate=True)  # (V, V)
        self.register_buffer("table", (counts / counts.sum(-1, keepdim=True)).log())  # (V, V)

    def forward(self, tokens, cache=None):
        logits, new_cache = self.inner(tokens)  # (B, L, V)
        return logits.log_softmax(-1) * 0.1 + self.table[tokens], new_cache
