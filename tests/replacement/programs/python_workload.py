# SPDX-License-Identifier: BSL-1.0
"""A python3 workload for tests/replacement/real_programs.py: dicts, lists, strings, JSON round
trips, four threads, and child processes started (fork or vfork, then exec) while the other threads
allocate, with output that depends only on the computation (run it with PYTHONHASHSEED=0 and
PYTHONMALLOC=malloc, so every object comes from malloc)."""

import hashlib
import json
import subprocess
import sys
import threading


def records(count, salt):
    """Nested records of strings, numbers and lists, different per salt."""
    return [
        {
            "id": i,
            "name": f"item-{salt}-{i}" * (1 + i % 5),
            "tags": [f"t{(i * j + salt) % 97}" for j in range(i % 11)],
            "score": (i * 2654435761 + salt) % 1000003 / 7.0,
            "nested": {"depth": i % 7, "children": list(range(i % 13))},
        }
        for i in range(count)
    ]


def churn(salt, rounds):
    """Builds, serializes, parses and reshapes records; returns a digest of what it saw."""
    digest = hashlib.sha256()
    for r in range(rounds):
        data = records(2000, salt * 1000 + r)
        text = json.dumps(data, sort_keys=True)
        back = json.loads(text)
        assert back == data
        index = {}
        for rec in back:
            index.setdefault(rec["nested"]["depth"], []).append(rec["name"])
        words = " ".join(sorted(name[:12] for names in index.values() for name in names))
        digest.update(words.encode())
        digest.update(str(sorted((k, len(v)) for k, v in index.items())).encode())
    return digest.hexdigest()


def main():
    print("single:", churn(0, 3))
    results = [None] * 4

    def worker(n):
        results[n] = churn(n + 1, 3)
        if n == 0:
            child = subprocess.run([sys.executable, "-c", "print(sum(range(100000)))"],
                                   capture_output=True, text=True, check=True)
            results[n] += " child " + child.stdout.strip()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n, r in enumerate(results):
        print(f"thread {n}:", r)
    big = {str(i): "x" * (i % 300) for i in range(100000)}
    print("dict:", len(big), sum(len(v) for v in big.values()))
    del big
    print("strings:", len("".join(str(i) for i in range(200000))))


main()
