"""Correct answers to gpt Tasks 4-6 and 8 written differently from the reference: each must pass its check.

Every builder takes the reference namespace (for the parts of earlier tasks) and returns the student object.
"""
import functools

import torch
import torch.nn as nn
import torch.nn.functional as F


# ----- Task 4: GPTBlock -----------------------------------------------------------------------------------------

def block_with_named_sublayers(ns):
    """Sub-layers as methods, dropout inside the feed-forward Sequential, the cache passed by position."""
    attention_class = ns["CausalSelfAttention"]

    class Block(nn.Module):
        def __init__(self, embed_dim, num_heads, feedforward_dim, max_len, activation=nn.GELU, dropout=0.0):
            super().__init__()
            self.dropout = nn.Dropout(dropout)
            self.feedforward = nn.Sequential(nn.Linear(embed_dim, feedforward_dim), activation(),
                                             nn.Linear(feedforward_dim, embed_dim))
            self.attention = attention_class(embed_dim, num_heads, max_len)
            self.norm2 = nn.LayerNorm(embed_dim)
            self.norm1 = nn.LayerNorm(embed_dim)

        def _attend(self, x, cache):
            out, new_cache = self.attention(self.norm1(x), cache)
            return self.dropout(out), new_cache

        def _mlp(self, x):
            return self.dropout(self.feedforward(self.norm2(x)))

        def forward(self, x, cache=None):
            attended, new_cache = self._attend(x, cache)
            residual = x + attended
            return residual + self._mlp(residual), new_cache

    return Block


def block_rebuilding_the_cache(ns):
    """The reference block, but the cache unpacked into keys and values and returned as a new tuple."""
    base = ns["GPTBlock"]

    class Block(base):
        def forward(self, x, cache=None):
            past = None if cache is None else (cache[0], cache[1])
            attended, (keys, values) = self.attention(self.norm1(x), cache=past)
            x = x + self.dropout(attended)
            return x + self.dropout(self.feedforward(self.norm2(x))), (keys, values)

    return Block


# ----- Task 5: GPT ------------------------------------------------------------------------------------------------

def model_tied_the_other_way(ns):
    """The embedding takes the head's Parameter; blocks zipped with the cache; the activation passed explicitly."""
    return tied_the_other_way(ns, nn.GELU)


def model_with_tanh_gelu(ns):
    """A mistake (test_checks_model.py): the same model with GELU's tanh approximation in its blocks."""
    return tied_the_other_way(ns, functools.partial(nn.GELU, approximate="tanh"))


def tied_the_other_way(ns, activation):
    """A GPT whose embedding takes the head's Parameter, its blocks built with activation, zipped with the cache."""
    block_class = ns["GPTBlock"]

    class Model(nn.Module):
        def __init__(self, vocab_size, embed_dim, num_heads, feedforward_dim, num_layers, max_len, dropout=0.0):
            super().__init__()
            self.lm_head = nn.Linear(embed_dim, vocab_size, bias=False)
            self.token_embedding = nn.Embedding(vocab_size, embed_dim)
            self.token_embedding.weight = self.lm_head.weight
            self.blocks = nn.ModuleList(block_class(embed_dim, num_heads, feedforward_dim, max_len, activation, dropout)
                                        for _ in range(num_layers))
            self.final_norm = nn.LayerNorm(embed_dim)
            self.max_len = max_len

        def forward(self, tokens, cache=None):
            x, new_cache = self.token_embedding(tokens), []
            for block, entry in zip(self.blocks, cache if cache is not None else [None] * len(self.blocks)):
                x, entry = block(x, entry)
                new_cache.append(entry)
            return self.lm_head(self.final_norm(x)), new_cache

    return Model


def model_tied_after_construction(ns):
    """The reference built untied, then tied by assignment after construction (a subclass's __init__)."""
    base = ns["GPT"]

    class Model(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.lm_head = nn.Linear(self.token_embedding.embedding_dim, self.token_embedding.num_embeddings,
                                     bias=False)
            self.lm_head.weight = self.token_embedding.weight

    return Model


# ----- Task 6: sample_next_token ---------------------------------------------------------------------------------

def sample_with_topk_scatter(logits, temperature=1.0, top_k=None, generator=None):
    """top-k by torch.topk and scatter into a -inf tensor, the ties with the k-th put back; temperature by .div."""
    if temperature == 0:
        return torch.argmax(logits, dim=1).unsqueeze(1)
    scaled = logits.div(temperature)
    if top_k is not None and top_k < scaled.shape[-1]:
        values, indices = torch.topk(scaled, top_k, dim=-1)
        kept = torch.full_like(scaled, float("-inf")).scatter(-1, indices, values)
        scaled = torch.where(scaled == values[:, -1:], scaled, kept)  # ties with the k-th largest stay
    return torch.multinomial(F.softmax(scaled, dim=-1), num_samples=1, generator=generator)


def sample_with_sort_and_log_softmax(logits, temperature=1.0, top_k=None, generator=None):
    """The k-th largest from a descending sort, probabilities through log_softmax().exp()."""
    if not temperature:
        return logits.max(dim=-1, keepdim=True).indices
    logits = logits / temperature
    if top_k:
        threshold = logits.sort(dim=-1, descending=True).values[:, min(top_k, logits.size(-1)) - 1].unsqueeze(-1)
        logits = torch.where(logits >= threshold, logits, torch.tensor(float("-inf"), dtype=logits.dtype))
    return torch.multinomial(logits.log_softmax(dim=-1).exp(), 1, generator=generator)


# ----- Task 8: generate -----------------------------------------------------------------------------------------

def generate_with_while_loop(ns):
    """A while loop over a buffer on the embedding's device, torch.inference_mode, the mode restored in `finally`."""
    sample = ns["sample_next_token"]

    def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, use_cache=True, generator=None):
        batch_size, prompt_len = prompt.shape
        total = prompt_len + max_new_tokens
        if total > model.max_len:
            raise ValueError(f"{total} tokens exceed max_len={model.max_len}")
        was_training = model.training
        model.eval()
        try:
            with torch.inference_mode():
                device = model.token_embedding.weight.device  # reads a pinned part of GPT
                tokens = torch.empty(batch_size, total, dtype=torch.long, device=device)
                tokens[:, :prompt_len] = prompt
                length, cache = prompt_len, None
                while length < total:
                    if use_cache:
                        start = 0 if cache is None else length - 1
                        logits, cache = model(tokens[:, start:length], cache=cache)
                    else:
                        logits, _ = model(tokens[:, :length])
                    tokens[:, length:length + 1] = sample(logits[:, -1, :], temperature, top_k, generator)
                    length += 1
            return tokens.clone()
        finally:
            model.train(was_training)

    return generate


def generate_calling_forward(ns):
    """A for loop that calls model.forward(...) itself (no module hooks run at the model's level) under no_grad."""
    sample = ns["sample_next_token"]

    def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, use_cache=True, generator=None):
        if prompt.size(1) + max_new_tokens > model.max_len:
            raise ValueError("prompt and new tokens exceed max_len")
        mode = model.training
        model.eval()
        try:
            with torch.no_grad():
                tokens, cache, feed = prompt, None, prompt
                for _ in range(max_new_tokens):
                    logits, cache = model.forward(feed, cache) if use_cache else model.forward(tokens)
                    step = sample(logits[:, -1], temperature, top_k, generator)  # (B, 1)
                    tokens = torch.cat([tokens, step], dim=1)
                    feed = step if use_cache else tokens
            return tokens
        finally:
            model.train(mode)

    return generate
