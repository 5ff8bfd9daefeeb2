"""Task 8: generate, run on a fixed-logits stand-in (draws, calls, mode, errors) and on the student's GPT (its
cache)."""
import copy
import inspect

import torch
import torch.nn as nn

from .._compare import expect_tensor
from .._core import Diagnosis, CheckFailure, NotImplementedYet, check_function, expect_callable, load_fixture, slug_of
from .._dependencies import explain_parts
from ._scripted import FixedLogitsModel

NAME = "generate"
# Sentences the known mistakes' diagnoses quote (course/gpt/mistakes.py).
CACHE_NEVER_USED = Diagnosis(
    "cache-never-used",
    "with use_cache=True every step feeds the whole sequence and no cache: feed the prompt once, then "
    "only the newest token with the cache the previous step returned, model(next_token, cache=cache).")
WHOLE_WITH_CACHE = Diagnosis(
    "whole-with-cache",
    "with use_cache=True a step feeds the whole sequence together with the cache, so the cached "
    "positions are counted twice: with a cache, feed only the tokens it does not hold yet (the newest "
    "one).")
CACHE_NOT_KEPT = Diagnosis(
    "cache-not-kept",
    "with use_cache=True the model received caches holding {past} positions: pass back the new cache "
    "each step returns, logits, cache = model(next_token, cache=cache).")
UNCACHED_FEEDS = Diagnosis(
    "uncached-feeds",
    "with use_cache=False each step should feed the whole sequence so far, model(tokens), without a "
    "cache; the steps fed {fed} positions.")
TRAIN_MODE = Diagnosis(
    "train-mode",
    "the model ran in train mode, so dropout stays active while generating: call model.eval() first (and "
    "restore the caller's mode before returning).")
MODE_NOT_RESTORED = Diagnosis(
    "mode-not-restored",
    "the model is left in {after} mode though the caller had it in {before} mode: note model.training "
    "before model.eval(), and give it back with model.train(...) at the end.")
MODE_AFTER_ERROR = Diagnosis(
    "mode-after-error",
    "when the model raises an error mid-generation, the caller's train mode is not restored: switch "
    "back in a `finally:` block (try: ... finally: model.train(mode_before)).")
BUILDS_GRAPH = Diagnosis(
    "builds-graph",
    "the model ran with gradients enabled, so every step builds an autograd graph: decorate generate with "
    "@torch.no_grad() (or wrap its loop in `with torch.no_grad():`).")
NO_MAX_LEN_ERROR = Diagnosis(
    "no-max-len-error",
    "a prompt of {prompt} tokens plus max_new_tokens={new} exceeds the model's max_len {max_len}, but "
    "no ValueError was raised: check prompt.size(1) + max_new_tokens > model.max_len first.")
MAX_LEN_OFF = Diagnosis(
    "max-len-off",
    "it raised for prompt {prompt} + max_new_tokens {new} = max_len {max_len}, which fits: raise only when "
    "prompt.size(1) + max_new_tokens > model.max_len.")
GLOBAL_RNG = Diagnosis(
    "global-rng",
    "it draws from torch's global random generator although a `generator` was given: pass `generator` on "
    "to sample_next_token at every step.")
DRAWS_DIFFER = Diagnosis(
    "draws-differ",
    "with a seeded generator the tokens differ from the pinned draws (each step: the last position's "
    "logits, sample_next_token(logits[:, -1], temperature, top_k, generator)).")
TEMPERATURE_DROPPED = Diagnosis(
    "temperature-dropped",
    "the temperature argument does not reach sample_next_token: pass it on, "
    "sample_next_token(logits[:, -1], temperature, top_k, generator).")
TOP_K_DROPPED = Diagnosis(
    "top-k-dropped",
    "the top_k argument does not reach sample_next_token: pass it on, "
    "sample_next_token(logits[:, -1], temperature, top_k, generator).")
FIRST_POSITION = Diagnosis(
    "first-position",
    "each step samples from the logits of the first position; the next token follows the last one: "
    "logits[:, -1].")
CACHE_CHANGES_TOKENS = Diagnosis(
    "cache-changes-tokens",
    "your model gives different tokens with use_cache=True and use_cache=False from generators in "
    "the same state: the cached path must compute the same logits (feed each new token with the "
    "cache the previous step returned; Tasks 3 and 5 must pass).")


def _call(task, generate, model, prompt, new_tokens, **options):
    """generate(model, prompt, new_tokens, **options), prompt left unchanged."""
    before = prompt.clone()
    shown = ", ".join(f"{key}={value!r}" for key, value in options.items() if key != "generator")
    try:
        tokens = task.call(f"{NAME}(model, prompt, {new_tokens}, {shown})", generate, model, prompt, new_tokens,
                           **options)
    except CheckFailure as failure:
        if isinstance(model, FixedLogitsModel) and "AttributeError" in str(failure):
            task.fail(f"{str(failure).split(': ', 1)[-1]} (this part of the check runs generate on a stand-in model "
                      "with fixed logits that has the pinned max_len, token_embedding, lm_head and forward(tokens, "
                      "cache=None) -> (logits, cache) only; generate should need no more).")
        raise
    if not torch.equal(before, prompt):
        task.fail(f"{NAME} modified `prompt` in place; build new tensors instead.")
    return tokens


def _expect_tokens(task, tokens, prompt, new_tokens):
    """A LongTensor (B, P + new_tokens) that starts with the prompt."""
    shape = (prompt.size(0), prompt.size(1) + new_tokens)
    expect_tensor(task, f"{NAME}(...) output", tokens)
    if tuple(tokens.shape) == (prompt.size(0), new_tokens) and prompt.size(1) > 0:
        task.fail(f"{NAME}(...) output has shape {tuple(tokens.shape)}: max_new_tokens = {new_tokens} tokens in all, "
                  f"the prompt's {prompt.size(1)} included; return the prompt followed by max_new_tokens new tokens, "
                  f"(B, P + max_new_tokens) = {shape}.")
    if tuple(tokens.shape) in ((shape[0], shape[1] - 1), (shape[0], shape[1] + 1)):
        short = tokens.size(1) < shape[1]
        task.fail(f"{NAME}(...) output has shape {tuple(tokens.shape)}, one token "
                  f"{'short' if short else 'too many'} of (B, P + max_new_tokens) = {shape}: append exactly one token "
                  f"per step, max_new_tokens = {new_tokens} steps (for _ in range(max_new_tokens)).")
    expect_tensor(task, f"{NAME}(...) output", tokens, shape)
    if tokens.dtype != torch.long:
        task.fail(f"{NAME}(...) returned dtype {tokens.dtype}; token ids are torch.long.")
    if not torch.equal(tokens[:, : prompt.size(1)], prompt):
        task.fail(f"{NAME}(...) output should start with the prompt, then the {new_tokens} new tokens.")
    return tokens


def _expect_calls(task, model, prompt, new_tokens, use_cache, training):
    """Eval mode, no gradients and the caller's mode back; P then 1, 1, ... positions with the cache, P, P + 1, ...
    without."""
    calls, length = model.calls, prompt.size(1)
    if not calls:
        task.fail(f"{NAME} never called the model: each step's logits come from model(tokens, cache=...).")
    if any(call["training"] for call in calls):
        task.fail(TRAIN_MODE)
    if model.training != training:
        modes = {True: "train", False: "eval"}
        task.fail(MODE_NOT_RESTORED.format(after=modes[model.training], before=modes[training]))
    if any(call["grad"] for call in calls):
        task.fail(BUILDS_GRAPH)
    fed, past = [call["fed"] for call in calls], [call["past"] for call in calls]
    if use_cache:
        if all(p == 0 for p in past) and fed[1:2] == [length + 1]:
            task.fail(CACHE_NEVER_USED)
        if any(p > 0 and f == p + 1 for p, f in zip(past, fed)):
            task.fail(WHOLE_WITH_CACHE)
        if fed[0] == length and past[1:] != list(range(length, length + len(past) - 1)):
            task.fail(CACHE_NOT_KEPT.format(past=past))
        if fed[0] != length or any(f != 1 for f in fed[1:]) or len(fed) not in (new_tokens, new_tokens + 1):
            task.fail(f"with use_cache=True the steps fed {fed} positions to the model; the first step feeds the "
                      f"whole prompt ({length}), every later step only the newest token (1), {new_tokens} steps in "
                      "all.")
    elif any(p > 0 for p in past) or fed[:new_tokens] != list(range(length, length + new_tokens)):
        task.fail(UNCACHED_FEEDS.format(fed=fed))


def _explain_draws(task, generate, tokens, case, state):
    """Fail naming the global generator, a failing sample_next_token (Task 6), or a known mistake."""
    if not torch.equal(state, torch.get_rng_state()):
        task.fail(GLOBAL_RNG)
    sampler = getattr(generate, "__globals__", {}).get("sample_next_token")
    if inspect.isfunction(sampler) and "sample_next_token" in generate.__code__.co_names:
        explain_parts(task, NAME, [("its sample_next_token", 6, sampler)], __package__)
    for diagnosis, signature in case.get("mistakes", {}).get("tokens", {}).items():
        if torch.equal(tokens, signature):
            task.fail(f"{NAME}: {diagnosis}", slug_of(diagnosis))


def _explain_greedy(task, generate, fixture, tokens, setting, use_cache):
    """Fail when the tokens drawn at a temperature above 0 are those of temperature 0: every step takes the argmax."""
    if not setting["temperature"]:
        return
    try:
        greedy = generate(FixedLogitsModel(fixture["table"], fixture["max_len"]), fixture["prompt"],
                          fixture["new_tokens"], temperature=0, top_k=setting["top_k"], use_cache=use_cache,
                          generator=torch.Generator().manual_seed(fixture["seed"]))
    except Exception:  # noqa: BLE001 -- only a probe
        return
    if isinstance(greedy, torch.Tensor) and torch.equal(greedy, tokens):
        task.fail(f"with temperature={setting['temperature']}, top_k={setting['top_k']}: the tokens are those of "
                  "temperature 0, each step's argmax: draw each step with sample_next_token(logits[:, -1], "
                  "temperature, top_k, generator) instead.")


def _expect_draws(task, generate, fixture):
    """Each setting's tokens, with and without the cache, from a seeded generator, on the stand-in."""
    table, prompt, new_tokens = fixture["table"], fixture["prompt"], fixture["new_tokens"]
    for case in fixture["cases"].values():
        setting, expected = case["setting"], case["tokens"]  # (B, P + new_tokens), the reference's draws
        for use_cache in (True, False):
            model, state = FixedLogitsModel(table, fixture["max_len"]).train(), torch.get_rng_state()
            tokens = _call(task, generate, model, prompt, new_tokens, **setting, use_cache=use_cache,
                           generator=torch.Generator().manual_seed(fixture["seed"]))
            _expect_tokens(task, tokens, prompt, new_tokens)
            _expect_calls(task, model, prompt, new_tokens, use_cache, training=True)
            if not torch.equal(tokens, expected):
                _explain_draws(task, generate, tokens, case, state)
                _explain_greedy(task, generate, fixture, tokens, setting, use_cache)
                task.fail(f"with temperature={setting['temperature']}, top_k={setting['top_k']}, "
                          f"use_cache={use_cache}: {DRAWS_DIFFER}", DRAWS_DIFFER.slug)


def _expect_max_len(task, generate, fixture):
    """A ValueError past max_len (none at max_len), the caller's mode restored either way."""
    table, prompt, max_len = fixture["table"], fixture["prompt"], fixture["max_len"]
    room = max_len - prompt.size(1)
    model = FixedLogitsModel(table, max_len).eval()
    try:
        generate(model, prompt, room, temperature=0.0)
    except ValueError:
        task.fail(MAX_LEN_OFF.format(prompt=prompt.size(1), new=room, max_len=max_len))
    except Exception:  # noqa: BLE001 -- _expect_draws has already run these calls and reported their errors
        pass
    if model.training:
        task.fail(MODE_NOT_RESTORED.format(after="train", before="eval"))
    model = FixedLogitsModel(table, max_len).train()
    try:
        generate(model, prompt, room + 1, temperature=0.0)
    except ValueError:
        pass
    except Exception as error:  # noqa: BLE001 -- any other error is the student's: say which one was expected
        task.fail(f"{NAME} raised {type(error).__name__} past max_len; raise a ValueError with a clear message.")
    else:
        task.fail(NO_MAX_LEN_ERROR.format(prompt=prompt.size(1), new=room + 1, max_len=max_len))
    if not model.training:
        task.fail(MODE_NOT_RESTORED.format(after="eval", before="train"))


def _expect_mode_after_error(task, generate, fixture):
    """The caller's train mode restored when the model raises mid-generation."""
    table, prompt, max_len = fixture["table"], fixture["prompt"], fixture["max_len"]
    failing = FixedLogitsModel(table, max_len, fail_at=2).train()
    try:
        generate(failing, prompt, max_len - prompt.size(1), temperature=0.0)
    except Exception:  # noqa: BLE001 -- the planted failure, or the student's reaction to it
        pass
    if not failing.training:
        task.fail(MODE_AFTER_ERROR)


def _student_copy(task, model):
    """A float64 CPU copy of the student's model (float64 makes cached and uncached logits agree to ~1e-15, so no
    draw can fall on the other side of a CDF boundary), with the model's vocabulary size and max_len."""
    if model is None or inspect.isclass(model) or not isinstance(model, nn.Module):
        what = "None" if model is None else (f"the class {model.__name__}" if inspect.isclass(model)
                                             else type(model).__name__)
        task.fail(f"expected your trained GPT model as the second argument, got {what}: "
                  "check_task_8(generate, model).")
    if not isinstance(getattr(model, "max_len", None), int):
        task.fail("the model has no integer `max_len` attribute (Task 5 pins GPT.max_len; generate reads it).")
    head = getattr(model, "lm_head", None)
    if not isinstance(head, nn.Linear):
        task.fail("the model has no nn.Linear `lm_head` (Task 5): pass the GPT model of the notebook.")
    return copy.deepcopy(model).to(device="cpu", dtype=torch.float64), head.out_features


def _fed_lengths(model):
    """Lists that fill with the number of positions of each call of model and of its token embedding (which sees
    the tokens however the model is called, model.forward(...) included), and the hooks to remove."""
    fed = {"model": [], "embedding": []}

    def recorder(key):
        def record(module, args, kwargs):
            tokens = args[0] if args else next(iter(kwargs.values()), None)
            fed[key].append(tokens.size(-1) if isinstance(tokens, torch.Tensor) else None)
        return record
    embedding = getattr(model, "token_embedding", None)
    hooks = [model.register_forward_pre_hook(recorder("model"), with_kwargs=True)]
    if isinstance(embedding, nn.Module):
        hooks.append(embedding.register_forward_pre_hook(recorder("embedding"), with_kwargs=True))
    return fed, hooks


def _expect_student_model(task, generate, twin, vocab_size):
    """On a copy of the student's GPT: identical tokens with and without the cache, P then 1, 1, ... positions."""
    prompt_len, new_tokens = min(8, twin.max_len - 4), 4
    prompt = torch.randint(vocab_size, (4, prompt_len), generator=torch.Generator().manual_seed(0))  # (B, P)
    for temperature in (1.0, 0.0):
        runs = {}
        for use_cache in (True, False):
            fed, hooks = _fed_lengths(twin)
            try:
                tokens = _call(task, generate, twin, prompt, new_tokens, temperature=temperature,
                               use_cache=use_cache, generator=torch.Generator().manual_seed(1))
            finally:
                for hook in hooks:
                    hook.remove()
            runs[use_cache] = _expect_tokens(task, tokens, prompt, new_tokens), fed["embedding"] or fed["model"]
        cached, uncached = runs[True][1], runs[False][1]
        if not cached or not uncached:
            task.fail(f"{NAME} never ran your model's token embedding (forward hooks saw no call): generate must run "
                      "the model, model(tokens, cache=...), at every step.")
        if cached[:1] != [prompt_len] or any(count != 1 for count in cached[1:]):
            task.fail(f"on your model, with use_cache=True the steps fed {cached} positions; the first step feeds "
                      f"the prompt ({prompt_len}), every later step only the newest token (1).")
        if uncached[:new_tokens] != list(range(prompt_len, prompt_len + new_tokens)):
            task.fail(UNCACHED_FEEDS.format(fed=uncached))
        if not torch.equal(runs[True][0], runs[False][0]):
            task.fail(CACHE_CHANGES_TOKENS)


@check_function(8)
def check_task_8(task, generate, model):
    """Check generate on a fixed-logits stand-in (shape, calls, mode, draws, errors) and on the student's model."""
    expect_callable(task, generate, NAME)
    fixture = load_fixture(__package__, 8)
    _expect_draws(task, generate, fixture)
    _expect_max_len(task, generate, fixture)
    _expect_mode_after_error(task, generate, fixture)
    twin, vocab_size = _student_copy(task, model)
    try:
        _expect_student_model(task, generate, twin, vocab_size)
    except NotImplementedYet:
        raise
    except CheckFailure:  # a model that fails Task 5 is the likelier cause: say so first
        if not type(model).__module__.startswith("torch"):
            explain_parts(task, NAME, [("your model's class", 5, type(model))], __package__)
        raise
    task.passed("one new position per cached step, identical tokens with and without the cache, draws from the "
                "given generator, eval mode without gradients, the caller's mode restored, and the max_len "
                "ValueError are right.")
