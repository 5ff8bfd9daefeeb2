"""Task 6: sample_next_token on fixed logits: shape, greedy temperature 0, distributions, exact seeded draws."""
import math

import torch

from .._compare import expect_tensor
from .._core import Diagnosis, check_function, expect_callable, load_fixture, one_line, slug_of
from .._probes import normalised_axis
from ._probes_generic import arguments_of, reduced_along, shift_changes, torch_calls

NAME = "sample_next_token"
SIGMAS = 5.0  # a frequency may stray this many binomial standard deviations from its probability
PINNED = "torch.multinomial(torch.softmax(logits / temperature, dim=-1), 1, generator=generator)"
# Sentences the known mistakes' diagnoses quote (course/gpt/mistakes.py).
SHAPE_B = Diagnosis(
    "shape-b",
    "it returns shape (B,) where (B, 1) is pinned (generate concatenates it to the tokens): keep the sample "
    "axis, torch.multinomial(probabilities, 1) already gives (B, 1).")
GLOBAL_RNG = Diagnosis(
    "global-rng-instead-of-the-generator",
    "it draws from torch's global random generator although a `generator` was given: pass it on, "
    f"{PINNED}, so that a seeded generator makes the draws repeatable.")
GREEDY_DRAWS = Diagnosis(
    "greedy-draws",
    "with temperature 0 it draws from the generator; temperature 0 means greedy: return "
    "logits.argmax(dim=-1, keepdim=True) without sampling.")
GREEDY_MISSING = Diagnosis(
    "greedy-missing",
    "temperature 0 means greedy: return logits.argmax(dim=-1, keepdim=True) before any division by "
    "the temperature.")
NOT_GREEDY = Diagnosis(
    "not-greedy",
    "with temperature 0 it should return the argmax of each row, logits.argmax(dim=-1, keepdim=True).")
TEMPERATURE_AFTER_SOFTMAX = Diagnosis(
    "temperature-after-softmax",
    "the temperature changes nothing in any setting (the draws follow softmax(logits)): "
    "divide the logits before the softmax, softmax(logits / T); a division of the "
    "probabilities after it is undone by multinomial's normalisation.")
TEMPERATURE_ONLY_WITHOUT_TOP_K = Diagnosis(
    "temperature-only-without-top-k",
    "the temperature works without top_k but changes nothing when top_k is given (the "
    "draws follow softmax(logits) over the k largest): divide the logits by the "
    "temperature in every case, before top-k and the softmax.")
TEMPERATURE_MULTIPLIED = Diagnosis(
    "temperature-multiplied",
    "a higher temperature sharpens the distribution instead of flattening it: divide the logits "
    "by the temperature, softmax(logits / T), rather than multiply.")
TOP_K_SMALLEST = Diagnosis(
    "top-k-smallest",
    "top-k keeps the k smallest logits: keep the k largest, those >= the k-th largest "
    "(logits.topk(k).values[:, -1:]), and set the others to -inf.")
TOP_K_MINUS_ONE = Diagnosis(
    "top-k-minus-one",
    "top-k keeps only k - 1 tokens: keep every logit >= the k-th largest (a strict > drops the k-th "
    "itself).")
TOP_K_PLUS_ONE = Diagnosis(
    "top-k-plus-one",
    "top-k keeps k + 1 tokens: the k-th largest logit is logits.topk(k).values[:, -1:] (index k - 1 "
    "of the logits sorted in descending order, not k); keep the logits >= it.")
TOP_K_ZERO = Diagnosis(
    "top-k-zero",
    "top-k sets the logits outside the k largest to 0, which leaves them a probability: set them to -inf, "
    "logits.masked_fill(logits < kth, float(\"-inf\")), so that they are never drawn.")
TOP_K_IGNORED = Diagnosis(
    "top-k-ignored",
    "top_k is ignored: with top_k = k only the k largest logits may be drawn; set the others to -inf.")
TOP_K_ABOVE_VOCAB = Diagnosis(
    "top-k-above-vocab",
    "top_k above the vocabulary size keeps every token, as None does: take the k-th largest only when "
    "top_k < logits.size(-1) (torch.topk fails for k > V).")
TIES_DROPPED = Diagnosis(
    "ties-dropped",
    "top-k keeps exactly k tokens where others tie with the k-th largest logit (torch.topk and scatter "
    "pick one of the tied): ties with the k-th largest logit must be kept; keep the logits >= the k-th "
    "largest, logits.masked_fill(logits < kth, -inf) with kth = logits.topk(k).values[:, -1:].")
TIED = (2.0, 1.0, 1.0, 1.0, 0.5, -1.0)  # the 2nd largest logit shared by three tokens: top_k=2 keeps four
TIED_TOP_K, TIE_DRAWS = 2, 1000  # a tied token has probability 1 / (e + 3) per draw: never drawn means dropped
MODIFIES_LOGITS = Diagnosis(
    "modifies-logits",
    "it modified `logits` in place (e.g. `logits /= temperature`); build a new tensor instead.")


def _draw(task, sample_next_token, logits, setting, generator, what=None):
    """sample_next_token(logits, **setting, generator) checked for type, dtype, shape (B, 1) and range."""
    before = logits.clone()
    what = what or f"{NAME}(logits, temperature={setting['temperature']}, top_k={setting['top_k']}, generator=g)"
    tokens = _call(task, sample_next_token, logits, setting, generator, what)
    if not torch.equal(before, logits):
        task.fail(MODIFIES_LOGITS)
    expect_tensor(task, what, tokens)
    if tuple(tokens.shape) == (logits.size(0),):
        task.fail(SHAPE_B)
    if isinstance(tokens, torch.Tensor) and tuple(tokens.shape) != (logits.size(0), 1):
        axis = reduced_along(tokens, logits, lambda t, a: t.argmax(a, keepdim=True))
        if axis is not None and axis != logits.dim() - 1:
            task.fail(f"{what} returns logits.argmax(dim={axis}), shape {tuple(tokens.shape)}: dim {axis} is the "
                      "batch; take each row's argmax over the vocabulary, logits.argmax(dim=-1, keepdim=True).")
    expect_tensor(task, what, tokens, (logits.size(0), 1))
    if tokens.dtype != torch.long:
        task.fail(f"{what} has dtype {tokens.dtype}; token ids are torch.long (torch.multinomial and argmax give it).")
    if tokens.min() < 0 or tokens.max() >= logits.size(-1):
        task.fail(f"{what} holds ids outside 0 .. {logits.size(-1) - 1}: return token ids, not probabilities.")
    return tokens


def _call(task, sample_next_token, logits, setting, generator, what):
    """sample_next_token(logits, **setting, generator=generator); an error for top_k > V is named."""
    if setting["top_k"] is not None and setting["top_k"] > logits.size(-1):
        try:
            return sample_next_token(logits, **setting, generator=generator)
        except NotImplementedError:
            pass  # task.call below says "not implemented yet"
        except Exception as error:  # noqa: BLE001 -- any student error becomes a message
            task.fail(f"{what} raised {type(error).__name__} ({one_line(error, 80)}): {TOP_K_ABOVE_VOCAB}",
                      TOP_K_ABOVE_VOCAB.slug)
    try:
        return sample_next_token(logits, **setting, generator=generator)
    except NotImplementedError:
        pass  # task.call below says "not implemented yet"
    except Exception:  # noqa: BLE001 -- explained first, then task.call repeats it as the student's error
        _explain_probabilities(task, sample_next_token, logits, setting, what)
    return task.call(what, sample_next_token, logits, **setting, generator=generator)


SOFTMAXES = (torch.softmax, torch.Tensor.softmax, torch.nn.functional.softmax, torch.log_softmax,
             torch.Tensor.log_softmax, torch.nn.functional.log_softmax)


def _softmax_axes(run):
    """The axes (non-negative) of the softmaxes that run() takes of 2-D tensors, in order."""
    axes = []
    for func, args, kwargs in torch_calls(run):
        if any(func is softmax for softmax in SOFTMAXES) and args and isinstance(args[0], torch.Tensor):
            dim = args[1] if len(args) > 1 else kwargs.get("dim")
            if isinstance(dim, int) and args[0].dim() == 2:
                axes.append(dim % 2)
    return axes


def _explain_probabilities(task, sample_next_token, logits, setting, what):
    """Fail naming the axis that the probabilities given to torch.multinomial are normalised over, when not the
    vocabulary, or how many tokens top-k leaves per row, when not top_k."""
    run = lambda: sample_next_token(logits, **setting, generator=torch.Generator().manual_seed(0))
    if 0 in _softmax_axes(run):
        task.fail(f"{what}: the softmax runs over dim 0, the batch: each row's probabilities must sum to 1 over the "
                  "vocabulary, torch.softmax(logits, dim=-1).")
    handed = [args[0] for args in arguments_of(run, torch.multinomial) if args]
    if len(handed) != 1 or handed[0].shape != logits.shape:
        return
    axis = normalised_axis(handed[0])
    if axis == 0 and logits.size(0) > 1:
        task.fail(f"{what}: the probabilities given to torch.multinomial sum to 1 along dim 0, the batch: normalise "
                  "each row over the vocabulary, torch.softmax(logits, dim=-1).")
    asked = setting.get("top_k") or logits.size(-1)
    if asked < logits.size(-1):
        kept = sorted(set((handed[0] > 0).sum(-1).tolist()))
        if kept and all(count < asked for count in kept):
            task.fail(f"{what}: top-k leaves {' or '.join(map(str, kept))} token(s) per row a nonzero probability "
                      f"where the logits have no ties, not top_k = {asked}: keep every logit >= the k-th largest, "
                      "kth = logits.topk(k, dim=-1).values[:, -1:] (the last of the k values, not the first).")


def _expect_shift_invariant(task, sample_next_token, fixture):
    """Adding a constant to every logit of a row changes no probability: the draws stay the same (no overflow)."""
    logits, setting = fixture["logits"], dict(temperature=1.0, top_k=None)
    run = lambda tensor: sample_next_token(tensor, **setting, generator=torch.Generator().manual_seed(0))
    change = shift_changes(run, logits, 1000.0)
    if change:
        task.fail(f"{NAME} with every logit raised by 1000 {'draws other tokens' if change == 'differs' else change}, "
                  "though a softmax does not change when a constant is added to a row: exp(logits) overflows to inf "
                  "for large logits; use torch.softmax(logits, dim=-1), which subtracts each row's maximum first.")


def _expect_generator_used(task, sample_next_token, fixture):
    """Given a generator, the global generator is left alone; with temperature 0 neither is touched."""
    logits, setting = fixture["logits"], dict(temperature=2.0, top_k=None)  # a change an in-place division shows
    state = torch.get_rng_state()
    _draw(task, sample_next_token, logits, setting, torch.Generator().manual_seed(0))
    if not torch.equal(state, torch.get_rng_state()):
        task.fail(GLOBAL_RNG)
    generator = torch.Generator().manual_seed(0)
    before = generator.get_state()
    _expect_greedy_runs(task, sample_next_token, logits)
    greedy = _draw(task, sample_next_token, logits, dict(temperature=0, top_k=None), generator)
    if not torch.equal(greedy, logits.argmax(dim=-1, keepdim=True)):
        task.fail(NOT_GREEDY)
    if not torch.equal(before, generator.get_state()) or not torch.equal(state, torch.get_rng_state()):
        task.fail(GREEDY_DRAWS)


def _expect_greedy_runs(task, sample_next_token, logits):
    """temperature 0 after temperature 2 worked: an error here is the division by zero of a missing greedy case."""
    try:
        sample_next_token(logits, temperature=0, top_k=None, generator=torch.Generator().manual_seed(0))
    except NotImplementedError:
        pass  # the call that follows says "not implemented yet"
    except Exception as error:  # noqa: BLE001 -- any student error becomes a message
        task.fail(f"with temperature=0 it raised {type(error).__name__} ({one_line(error, 80)}) where temperature=2.0 "
                  f"works: {GREEDY_MISSING}", GREEDY_MISSING.slug)


def _name_mistake(task, what, got, mistakes, atol):
    """Fail with the diagnosis of the first known mistake whose output got matches within atol."""
    for diagnosis, signature in (mistakes or {}).items():
        if got.shape == signature.shape and (got.to(signature.dtype) - signature).abs().max() <= atol:
            task.fail(f"{what}: {diagnosis}", slug_of(diagnosis))


def _frequencies(task, sample_next_token, fixture, case):
    """How often each token comes in many draws from row 0 of the logits with the case's setting: (V,)."""
    count, row, setting = fixture["frequency_draws"], fixture["logits"][:1], case["setting"]
    generator = torch.Generator().manual_seed(fixture["frequency_seed"])
    what = f"{NAME} with temperature={setting['temperature']}, top_k={setting['top_k']}"
    tokens = _draw(task, sample_next_token, row.repeat(count, 1), setting, generator, what)  # (N, 1)
    return torch.bincount(tokens.flatten(), minlength=row.size(-1)).to(case["probabilities"].dtype) / count


def _allowed(probabilities, count):
    """SIGMAS binomial deviations of count draws around each probability: (V,)."""
    return SIGMAS * (probabilities * (1 - probabilities) / count).sqrt() + 1e-9


def _fits(frequencies, probabilities, count):
    return bool(((frequencies - probabilities).abs() <= _allowed(probabilities, count)).all())


def _fits_everywhere(diagnosis, observed, cases, count):
    """Whether the known mistake explains every setting: its stored frequencies where it changes them, the right
    probabilities where it does not."""
    for name, frequencies in observed.items():
        signature = cases[name].get("mistakes", {}).get("frequencies", {}).get(diagnosis)
        if signature is None and not _fits(frequencies, cases[name]["probabilities"][0], count):
            return False
        if signature is not None and (frequencies - signature).abs().max() > SIGMAS * math.sqrt(0.25 / count):
            return False
    return True


def _expect_distributions(task, sample_next_token, fixture):
    """Frequencies of many draws from one row, within SIGMAS binomial deviations of each setting's probabilities;
    a known mistake is named only when it explains every setting, right and wrong."""
    count, cases = fixture["frequency_draws"], fixture["cases"]
    observed = {name: _frequencies(task, sample_next_token, fixture, case) for name, case in cases.items()}
    wrong = [name for name, frequencies in observed.items()
             if not _fits(frequencies, cases[name]["probabilities"][0], count)]
    if not wrong:
        return
    setting = cases[wrong[0]]["setting"]
    what = f"{NAME} with temperature={setting['temperature']}, top_k={setting['top_k']}"
    for name in wrong:
        for diagnosis in cases[name].get("mistakes", {}).get("frequencies", {}):
            if _fits_everywhere(diagnosis, observed, cases, count):
                task.fail(f"{what}: {diagnosis}", slug_of(diagnosis))
    _explain_probabilities(task, sample_next_token, fixture["logits"], setting, what)
    frequencies, probabilities = observed[wrong[0]], cases[wrong[0]]["probabilities"][0]
    worst = int(((frequencies - probabilities).abs() - _allowed(probabilities, count)).argmax())
    right = [name for name in observed if name not in wrong]
    task.fail(f"{what}: token {worst} came {frequencies[worst]:.3f} of the time in {count} draws, but its "
              f"probability is {probabilities[worst]:.3f} (softmax(logits / temperature) over the logits >= the k-th "
              f"largest); the draws are off in the settings {_listed(wrong)} and right in {_listed(right) or 'none'}.")


def _listed(names):
    return ", ".join(f"({name})" for name in names)


def _expect_ties_kept(task, sample_next_token):
    """top_k keeps every logit >= the k-th largest: with the k-th tied, every tied token is drawn too."""
    what = f"{NAME} with temperature=1.0, top_k={TIED_TOP_K} on the logits {list(TIED)}"
    logits = torch.tensor([TIED] * TIE_DRAWS)  # (N, V): one row per draw
    tokens = _draw(task, sample_next_token, logits, dict(temperature=1.0, top_k=TIED_TOP_K),
                   torch.Generator().manual_seed(0), what)  # (N, 1)
    drawn = torch.bincount(tokens.flatten(), minlength=len(TIED))  # (V,)
    kth = sorted(TIED, reverse=True)[TIED_TOP_K - 1]
    if any(drawn[token] == 0 for token, logit in enumerate(TIED) if logit == kth):
        task.fail(f"{what}: {TIES_DROPPED}", TIES_DROPPED.slug)


def _expect_exact_draws(task, sample_next_token, fixture):
    """Draws from a seeded generator equal the pinned torch.multinomial call's from the same seed."""
    logits, seed, calls = fixture["logits"], fixture["draw_seed"], fixture["draw_calls"]
    for case in fixture["cases"].values():
        setting = case["setting"]
        mine, theirs = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
        got = torch.cat([_draw(task, sample_next_token, logits, setting, theirs) for _ in range(calls)], 1)
        expected = torch.cat([torch.multinomial(case["probabilities"], 1, generator=mine) for _ in range(calls)], 1)
        if not torch.equal(got, expected):
            what = f"{NAME} with temperature={setting['temperature']}, top_k={setting['top_k']}"
            _name_mistake(task, what, got, case.get("mistakes", {}).get("draws"), 0)
            task.fail(f"{what}: draws from a seeded generator differ from {PINNED}'s with the same seed (the "
                      "distribution is right): draw exactly once per call with torch.multinomial and `generator`.")


@check_function(6)
def check_task_6(task, sample_next_token):
    """Check sample_next_token: shape (B, 1), the generator, greedy temperature 0, distributions, exact draws."""
    expect_callable(task, sample_next_token, NAME)
    fixture = load_fixture(__package__, 6)
    _expect_generator_used(task, sample_next_token, fixture)
    _expect_distributions(task, sample_next_token, fixture)
    _expect_ties_kept(task, sample_next_token)
    _expect_exact_draws(task, sample_next_token, fixture)
    _expect_shift_invariant(task, sample_next_token, fixture)
    task.passed("shape (B, 1), greedy temperature 0, temperature before the softmax, top-k with its ties, and draws "
                "from the "
                "given generator are right.")
