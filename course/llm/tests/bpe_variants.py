"""Valid answers of Tasks 1 and 2 written another way (from the BPE prototype's alternatives), self-contained: each
must pass its check."""
import heapq
from collections import Counter, defaultdict

from course_lib.llm import PRETOKENIZE


def _word_counts(text):
    return Counter(tuple(word.encode("utf-8", errors="surrogatepass")) for word in PRETOKENIZE.findall(text))


def _merged(ids, pair, new_id):
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == tuple(pair):
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


class _Greater:
    """heapq is a min-heap: this key inverts the order of (count, bytes a, bytes b)."""

    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key

    def __lt__(self, other):
        return self.key > other.key


def heap_train_bpe(text, vocab_size):
    """A max-heap of (count, bytes a, bytes b) with lazy deletion; every pair whose count changed is pushed again."""
    counted = _word_counts(text)
    words, freqs = [list(word) for word in counted], list(counted.values())
    vocab = {i: bytes([i]) for i in range(256)}
    counts, where = Counter(), defaultdict(set)
    for index, word in enumerate(words):
        for pair in zip(word, word[1:]):
            counts[pair] += freqs[index]
            where[pair].add(index)
    heap = [(_Greater((count, vocab[a], vocab[b])), (a, b)) for (a, b), count in counts.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < vocab_size - 256 and heap:
        key, pair = heapq.heappop(heap)
        if counts.get(pair, 0) != key.key[0] or key.key[0] <= 0:
            continue  # a stale entry
        new_id = 256 + len(merges)
        merges.append(pair)
        vocab[new_id] = vocab[pair[0]] + vocab[pair[1]]
        touched = set()
        for index in where.pop(pair):
            old = words[index]
            new = _merged(old, pair, new_id)
            if len(new) == len(old):
                continue
            for gone in zip(old, old[1:]):
                counts[gone] -= freqs[index]
            for added in zip(new, new[1:]):
                counts[added] += freqs[index]
                where[added].add(index)
            touched.update(zip(old, old[1:]), zip(new, new[1:]))
            words[index] = new
        counts.pop(pair, None)
        for changed in touched:
            if counts.get(changed, 0) > 0:
                heapq.heappush(heap, (_Greater((counts[changed], vocab[changed[0]], vocab[changed[1]])), changed))
    return merges


def tuple_words_train_bpe(text, vocab_size):
    """Words as tuples in a dict {word: frequency}, an index pair -> words, a per-merge max over the live counts."""
    freq = dict(_word_counts(text))
    counts, index = Counter(), defaultdict(set)
    for word, f in freq.items():
        for pair, n in Counter(zip(word, word[1:])).items():
            counts[pair] += n * f
            index[pair].add(word)
    vocab = [bytes([i]) for i in range(256)]
    merges = []
    while len(vocab) < vocab_size:
        live = {pair: count for pair, count in counts.items() if count > 0}
        if not live:
            break
        pair = max(live, key=lambda p: (live[p], vocab[p[0]], vocab[p[1]]))
        new_id = len(vocab)
        vocab.append(vocab[pair[0]] + vocab[pair[1]])
        merges.append(pair)
        for word in list(index.pop(pair)):
            f = freq.pop(word, None)
            if f is None:
                continue
            new = tuple(_merged(list(word), pair, new_id))
            for old_pair, n in Counter(zip(word, word[1:])).items():
                counts[old_pair] -= n * f
                index[old_pair].discard(word)
            for new_pair, n in Counter(zip(new, new[1:])).items():
                counts[new_pair] += n * f
                index[new_pair].add(new)
            freq[new] = freq.get(new, 0) + f
        counts.pop(pair, None)
    return [tuple(pair) for pair in merges]


class SequentialTokenizer:
    """Encode applies every merge in the order learnt; decode joins a bytearray; merges given as lists work too."""

    def __init__(self, merges):
        self.merges = [tuple(pair) for pair in merges]
        self.vocab = [bytes([i]) for i in range(256)]
        for a, b in self.merges:
            self.vocab.append(self.vocab[a] + self.vocab[b])

    def encode(self, text):
        out = []
        for word in PRETOKENIZE.findall(text):
            ids = list(word.encode("utf-8", "surrogatepass"))
            for k, pair in enumerate(self.merges):
                if len(ids) < 2:
                    break
                ids = _merged(ids, pair, 256 + k)
            out += ids
        return out

    def decode(self, ids):
        data = bytearray()
        for i in ids:
            data += self.vocab[i]
        try:
            return bytes(data).decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return bytes(data).decode("utf-8", "replace")


class ExplicitLoopTokenizer:
    """Encode scans each word for the lowest-rank pair with an explicit loop; returns a tuple-free list."""

    def __init__(self, merges):
        self.rank = {tuple(pair): k for k, pair in enumerate(merges)}
        self.bytes_of = {i: bytes([i]) for i in range(256)}
        for (a, b), k in self.rank.items():
            self.bytes_of[256 + k] = self.bytes_of[a] + self.bytes_of[b]

    def encode(self, text):
        result = []
        for word in PRETOKENIZE.findall(text):
            ids = list(word.encode("utf-8", errors="surrogatepass"))
            while True:
                ranked = [(self.rank[pair], i) for i, pair in enumerate(zip(ids, ids[1:])) if pair in self.rank]
                if not ranked:
                    break
                k = min(ranked)[0]
                ids = _merged(ids, list(self.rank)[k], 256 + k)
            result.extend(ids)
        return result

    def decode(self, ids):
        raw = b"".join([self.bytes_of[i] for i in ids])
        try:
            return raw.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return raw.decode("utf-8", "replace")
