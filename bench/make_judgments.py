"""Generate a realistic judgments JSONL file for benchmarks: N labels, 10 per query.

Deterministic (seeded), so two runs measure the same bytes. Every optional field appears on
some rows, non-ASCII text included, and every row is valid: the benchmark measures the cost of
reading and checking good data, which is the common case.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys


def make_lines(n: int, seed: int = 0):
    rng = random.Random(seed)
    strata = ["billing", "legal", "onboarding", "support", "sécurité"]
    for i in range(n):
        q = i // 10
        doc = f"s3://corpus/docs/{rng.randrange(n // 5 + 1)}.md"
        text = f"Paragraph {i} about refunds, invoices and café policy number {rng.random():.6f}."
        sha = hashlib.sha256(text.encode()).hexdigest()
        row = {
            "query_id": f"q{q:07d}",
            "query": f"how do I handle case {q} — refund?",
            "doc_uri": doc,
            "chunk_id": f"c1:{sha[:32]}",
            "text_sha": f"t1:{hashlib.sha256(sha.encode()).hexdigest()[:32]}",
            "relevance": rng.choice([0, 1, 1, 2, 3]),
            "corpus_fingerprint": "recursive/512/64",
            "labeled_by": "human:ana" if i % 3 else "synthetic:judge-1",
            "labeled_at": "2026-11-01T12:00:00Z",
            "stratum": strata[q % len(strata)],
        }
        if i % 7 == 0:
            row["notes"] = "checked twice"
        if i % 11 == 0:
            row["source_system"] = "zendesk"
        yield json.dumps(row, ensure_ascii=False, separators=(",", ":"))


def main() -> None:
    n = int(sys.argv[1])
    out = sys.argv[2]
    with open(out, "w", encoding="utf-8") as fh:
        for line in make_lines(n):
            fh.write(line + "\n")


if __name__ == "__main__":
    main()
