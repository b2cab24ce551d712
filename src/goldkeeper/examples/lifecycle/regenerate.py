"""Regenerate the lifecycle example: python src/goldkeeper/examples/lifecycle/regenerate.py

A small help center (three documents of real prose) chunked twice: by paragraph ("para/v1",
what the judgments were made against) and, after an edit and a re-index, by a sentence-window
chunker ("sentences/v2"). Judgments carry chunk_text and provenance; two runs over the new
chunks stand for two retrievers. `goldkeeper demo` runs the whole lifecycle on it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import goldkeeper

HERE = Path(__file__).parent

DOCS = {
    "kb://help/refunds": [
        "Annual plans can be refunded in full within 30 days of the renewal date. After 30 days the unused months are credited to the account instead of refunded.",
        "Monthly plans are not refundable once the billing period has started. You can cancel at any time and the plan stays active until the end of the period you paid for.",
        "Refunds go back to the card or bank account that paid. They usually appear within five to ten business days, depending on the bank.",
        "Enterprise contracts follow the terms of the master service agreement. Ask your account manager about credits or refunds on an enterprise plan.",
    ],
    "kb://help/security": [
        "Single sign-on is available on the Business and Enterprise plans. It supports SAML 2.0 and OpenID Connect with any standard identity provider.",
        "Audit logs record every sign-in, permission change and data export. Administrators can export them as CSV or stream them to a SIEM.",
        "Two-factor authentication can be required for every member of a workspace. Members without it are asked to set it up at their next sign-in.",
    ],
    "kb://help/data": [
        "Exports include every project, comment and attachment in the workspace. Large workspaces are exported in parts, and each part is emailed as it is ready.",
        "Deleted projects stay in the trash for 30 days. After that they are removed for good and cannot be restored, even by support.",
        "Data is stored in the region chosen when the workspace was created. Moving a workspace to another region is possible on the Enterprise plan.",
    ],
}

# The re-index edited one paragraph: the trash now keeps deleted projects for 60 days.
EDITED = {("kb://help/data", 1): "Deleted projects stay in the trash for 60 days. After that they are removed for good and cannot be restored, even by support."}

QUERIES = [
    ("q01", "can I get my money back on a yearly plan", "kb://help/refunds", 0, "billing"),
    ("q02", "cancel monthly subscription refund", "kb://help/refunds", 1, "billing"),
    ("q03", "how long until a refund shows on my card", "kb://help/refunds", 2, "billing"),
    ("q04", "refund for enterprise customers", "kb://help/refunds", 3, "billing"),
    ("q05", "does the product support SAML single sign-on", "kb://help/security", 0, "security"),
    ("q06", "where are audit logs and can I export them", "kb://help/security", 1, "security"),
    ("q07", "force 2FA for all members", "kb://help/security", 2, "security"),
    ("q08", "export all workspace data", "kb://help/data", 0, "data"),
    ("q09", "restore a deleted project", "kb://help/data", 1, "data"),
    ("q10", "move workspace data to another region", "kb://help/data", 2, "data"),
]

SENTENCE = re.compile(r"(?<=[.!?])\s+")


def chunks_v1():
    for uri, paragraphs in DOCS.items():
        for ordinal, text in enumerate(paragraphs):
            yield {"doc_uri": uri, "doc_revision": "2026-10", "ordinal": ordinal, "text": text}


def chunks_v2():
    """After the edit: refunds by single sentences (its paragraphs split), security two
    paragraphs per chunk (merged), data one paragraph per chunk (moved ids, one edited)."""
    for uri, paragraphs in DOCS.items():
        paragraphs = [EDITED.get((uri, i), p) for i, p in enumerate(paragraphs)]
        if uri.endswith("refunds"):
            pieces = [s for p in paragraphs for s in SENTENCE.split(p)]
        elif uri.endswith("security"):
            pieces = [" ".join(paragraphs[i:i + 2]) for i in range(0, len(paragraphs), 2)]
        else:
            pieces = paragraphs
        for ordinal, text in enumerate(pieces):
            yield {"doc_uri": uri, "doc_revision": "2026-11", "ordinal": ordinal, "text": text}


def main() -> None:
    old = {(c["doc_uri"], c["ordinal"]): c for c in goldkeeper_snapshot(chunks_v1(), "para/v1")}
    new = list(goldkeeper_snapshot(chunks_v2(), "sentences/v2"))
    labels = []
    for query_id, query, uri, ordinal, stratum in QUERIES:
        chunk = old[(uri, ordinal)]
        labels.append({"query_id": query_id, "query": query, "doc_uri": uri, "chunk_id": chunk["chunk_id"],
                       "text_sha": chunk["text_sha"], "chunk_text": chunk["text"], "relevance": 2,
                       "corpus_fingerprint": "para/v1", "labeled_by": "human:support-team",
                       "labeled_at": "2026-10-15T09:00:00Z", "stratum": stratum})
    (HERE / "chunks-v1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in chunks_v1()))
    (HERE / "chunks-v2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in chunks_v2()))
    (HERE / "judgments.jsonl").write_text(goldkeeper.dump_judgments(goldkeeper.parse_judgments(
        "".join(json.dumps(label) + "\n" for label in labels))))

    def best(label):  # the new chunks that hold the most of the labeled text's words
        words = set(label["chunk_text"].lower().split())
        return sorted(new, key=lambda c: (-len(words & set(c["text"].lower().split())), c["chunk_id"]))

    runs = {"run-a.jsonl": [], "run-b.jsonl": []}
    for index, label in enumerate(labels):
        ranked = [c["chunk_id"] for c in best(label)[:5]]
        runs["run-a.jsonl"].append({"query_id": label["query_id"], "ranking": ranked})
        # The second retriever is worse: the right chunk drops to third on every other query.
        worse = ranked[1:3] + ranked[:1] + ranked[3:] if index % 2 else ranked
        runs["run-b.jsonl"].append({"query_id": label["query_id"], "ranking": worse})
    for name, entries in runs.items():
        (HERE / name).write_text("".join(json.dumps(e) + "\n" for e in entries))


def goldkeeper_snapshot(rows, chunker):
    from goldkeeper.core.drift import snapshot_rows

    return snapshot_rows(rows, chunker)


if __name__ == "__main__":
    main()
