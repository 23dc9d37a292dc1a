"""Line-profile a small text-processing job: which lines of it are slow?

    python examples/line_demo.py

The job builds a corpus, counts words two ways (a hand-written loop and collections.Counter),
finds primes by trial division and by a sieve, and round-trips a report through json. Only this
folder is the project, so time spent inside the standard library is billed to the line of this
file that called it.
"""

from __future__ import annotations

import collections
import json
import random
import re
from pathlib import Path

from lineprofiler import LineProfiler

WORD = re.compile(r"\w+")


def make_corpus(n_words: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(500)] + ["the", "of", "and", "profile", "line"]
    words = [rng.choice(vocab) for _ in range(n_words)]
    return " ".join(words)


def count_by_hand(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for word in text.split():
        if word in counts:
            counts[word] += 1
        else:
            counts[word] = 1
    return counts


def count_with_counter(text: str) -> collections.Counter[str]:
    return collections.Counter(WORD.findall(text))


def primes_by_division(limit: int) -> list[int]:
    found = []
    for n in range(2, limit):
        is_prime = True
        for d in range(2, int(n**0.5) + 1):
            if n % d == 0:
                is_prime = False
                break
        if is_prime:
            found.append(n)
    return found


def primes_by_sieve(limit: int) -> list[int]:
    sieve = bytearray([1]) * limit
    sieve[0:2] = b"\0\0"
    for n in range(2, int(limit**0.5) + 1):
        if sieve[n]:
            sieve[n * n :: n] = bytes(len(range(n * n, limit, n)))
    return [n for n in range(limit) if sieve[n]]


def report(counts: dict[str, int], primes: list[int]) -> str:
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:10]
    blob = json.dumps({"top": top, "n_primes": len(primes)}, indent=2)
    return json.loads(blob)["top"][0][0]


def job() -> str:
    text = make_corpus(60_000)
    by_hand = count_by_hand(text)
    counter = count_with_counter(text)
    assert by_hand == dict(counter)
    slow = primes_by_division(20_000)
    fast = primes_by_sieve(20_000)
    assert slow == fast
    return report(by_hand, fast)


def main() -> None:
    profiler = LineProfiler(project_folder=Path(__file__).resolve().parent)
    profiler.clear()
    with profiler:
        most_common = job()
    print(f"most common word: {most_common!r}  (clock: {profiler.clock})\n")
    profiler.print_global_top_stats(min_time_us=0.01, top_n=15)
    print()
    profiler.print_stats(min_time_us=1, top_n_lines=6)


if __name__ == "__main__":
    main()
