"""The LLM judge against a local stub of the chat-completions API (goldkeeper.examples.stub_judge,
real HTTP on loopback): grades read exactly, every failure kind an error that leaves its pair
for people, a rerun answered from the cache, the key never written anywhere."""

from __future__ import annotations

import json

import pytest

from goldkeeper.core.judge import DEFAULT_PROMPT, JudgeAnswerError, messages, parse_answer, parse_grade, prompt_sha
from goldkeeper.examples.stub_judge import StubJudge
from goldkeeper.io.judge import ChatJudge, Pair, judge_pairs
from tests.conftest import run_cli

TOP = 3


def _pairs(n: int) -> tuple[list[Pair], dict[tuple[str, str], int]]:
    pairs, truth = [], {}
    for i in range(n):
        pair = Pair(f"rq1:{i:024x}", f"c1:{i:032x}", f"how do I reset password {i}", f"passage number {i} about things")
        pairs.append(pair)
        truth[pair.query, pair.text] = i % (TOP + 1)
    return pairs, truth


@pytest.fixture
def stub():
    started = []

    def start(**rules) -> tuple[StubJudge, str]:
        judge = StubJudge(**rules)
        url = judge.start()
        started.append(judge)
        return judge, url

    yield start
    for judge in started:
        judge.stop()


def test_grades_are_read_exactly_and_a_rerun_asks_nothing(stub, tmp_path):
    pairs, truth = _pairs(60)
    server, url = stub(truth=truth, latency=0.01)
    client = ChatJudge(url, "stub-judge", concurrency=8)
    cache = str(tmp_path / "cache.jsonl")
    first = judge_pairs(client, pairs, DEFAULT_PROMPT, TOP, concurrency=8, cache=cache)
    assert [j.grade for j in first] == [truth[p.query, p.text] for p in pairs]
    assert server.calls == 60 and all(j.tokens["completion_tokens"] == 5 for j in first)
    again = judge_pairs(client, pairs, DEFAULT_PROMPT, TOP, concurrency=8, cache=cache)
    assert [j.grade for j in again] == [j.grade for j in first] and all(j.cached for j in again)
    assert server.calls == 60  # nothing asked twice
    other = judge_pairs(client, pairs[:3], DEFAULT_PROMPT + " ", TOP, cache=cache)  # another prompt: asked again
    assert server.calls == 63 and not any(j.cached for j in other)
    client.close()


@pytest.mark.parametrize("kind", ["http500", "http429", "timeout", "malformed", "refusal", "out-of-scale"])
def test_every_failure_kind_is_an_error_for_its_pair_never_a_grade(stub, kind):
    pairs, truth = _pairs(16)
    _, url = stub(truth=truth, failures={kind: 1.0}, hang=3.0)
    client = ChatJudge(url, "stub-judge", timeout=1.0)
    found = judge_pairs(client, pairs, DEFAULT_PROMPT, TOP, concurrency=8, retries=1, backoff=0.01)
    client.close()
    assert all(j.grade is None and j.error for j in found)
    expected = {"http500": "http", "http429": "http", "timeout": "timeout"}.get(kind, kind)
    assert {j.kind for j in found} == {expected}
    transient = kind in ("http500", "http429", "timeout")
    assert all(j.attempts == (2 if transient else 1) for j in found)  # retried once, answers never


def test_transient_failures_are_retried_until_they_pass(stub):
    pairs, truth = _pairs(80)
    _, url = stub(truth=truth, failures={"http500": 0.3, "http429": 0.2})
    client = ChatJudge(url, "stub-judge")
    found = judge_pairs(client, pairs, DEFAULT_PROMPT, TOP, concurrency=16, retries=8, backoff=0.001)
    client.close()
    assert [j.grade for j in found] == [truth[p.query, p.text] for p in pairs]
    assert sum(j.attempts for j in found) > len(pairs)  # some were retried


def test_the_answer_is_read_strictly():
    def reply(content, **extra):
        return {"choices": [{"message": {"content": content, **extra}, "finish_reason": "stop"}]}

    assert parse_grade(reply('{"grade": 2}'), 3) == 2
    assert parse_grade(reply(' {"grade":0}\n'), 3) == 0
    for content, kind in [('{"grade": 4}', "out-of-scale"), ('{"grade": -1}', "out-of-scale"),
                          ('{"grade": 2.0}', "malformed"), ('{"grade": "2"}', "malformed"),
                          ('{"grade": true}', "malformed"), ('{"grade": 2, "why": "x"}', "malformed"),
                          ("2", "malformed"), ("Grade: 2", "malformed"), ("", "refusal"), (None, "refusal")]:
        with pytest.raises(JudgeAnswerError) as caught:
            parse_grade(reply(content), 3)
        assert caught.value.kind == kind, content
    with pytest.raises(JudgeAnswerError) as caught:
        parse_grade(reply(None, refusal="no"), 3)
    assert caught.value.kind == "refusal"
    with pytest.raises(JudgeAnswerError):
        parse_grade({"error": "x"}, 3)


def test_a_quote_is_read_as_strictly_and_only_when_asked_for():
    def reply(content):
        return {"choices": [{"message": {"content": content}, "finish_reason": "stop"}]}

    assert parse_answer(reply('{"grade": 2, "quote": "the words"}'), 3, quote=True) == (2, "the words")
    assert parse_answer(reply('{"grade": 0, "quote": null}'), 3, quote=True) == (0, None)
    assert parse_answer(reply('{"grade": 1, "quote": "  "}'), 3, quote=True) == (1, None)  # blank: no quote
    assert parse_answer(reply('{"grade": 1}'), 3, quote=True) == (1, None)
    for content, quote in [('{"grade": 1, "quote": "w"}', False), ('{"grade": 1, "quote": 3}', True),
                           ('{"grade": 1, "quote": ["w"]}', True), ('{"quote": "w"}', True),
                           ('{"grade": 1, "quote": "w", "why": "x"}', True)]:
        with pytest.raises(JudgeAnswerError) as caught:
            parse_answer(reply(content), 3, quote=quote)
        assert caught.value.kind == "malformed", content


def test_the_default_prompt_names_the_scale_and_asks_for_the_object():
    chat = messages(DEFAULT_PROMPT, "q?", "p.", 2)
    assert [m["role"] for m in chat] == ["system", "user"]
    assert "Query: q?" in chat[1]["content"] and "Passage: p." in chat[1]["content"]
    assert '{"grade": N}' in chat[1]["content"] and "from 0 to 2" in chat[1]["content"]
    assert "2 = the passage fully answers the query" in chat[1]["content"]
    assert prompt_sha(DEFAULT_PROMPT).startswith("p1:") and prompt_sha(DEFAULT_PROMPT) != prompt_sha(DEFAULT_PROMPT + " ")


def test_goldkeeper_judge_writes_answers_and_errors_and_keeps_the_key_out(stub, tmp_path, monkeypatch):
    queue = tmp_path / "queue.jsonl"
    items = []
    for i in range(6):
        items.append({"item_id": f"rq1:{i:024x}", "action": "rejudge", "status": "SPLIT", "query_id": f"q{i}",
                      "query": f"reset password {i}", "doc_uri": "kb://a", "relevance": 1,
                      "candidates": [{"chunk_id": f"c1:{i:031x}a", "doc_uri": "kb://a", "text": f"reset your password {i}"},
                                     {"chunk_id": f"c1:{i:031x}b", "doc_uri": "kb://a", "text": "billing and invoices"}]})
    queue.write_text("".join(json.dumps(item) + "\n" for item in items))
    _, url = stub(failures={"malformed": 0.2})
    monkeypatch.setenv("STUB_KEY", "sk-very-secret")
    result = run_cli("judge", str(queue), "--base-url", url, "--model", "stub-judge", "--api-key-env", "STUB_KEY",
                     "--out", str(tmp_path / "answers.jsonl"), "--now", "2026-12-04T00:00:00Z", "--format", "json",
                     cwd=tmp_path)
    assert result.code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["pairs"] == 12 and summary["graded"] + summary["errors"] == 12 and summary["errors"] >= 1
    assert summary["error_kinds"] == {"malformed": summary["errors"]} and summary["calls"] == 12
    answers = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert {a["labeled_by"] for a in answers} == {"synthetic:stub-judge"}
    assert {a["prompt_sha"] for a in answers} == {prompt_sha(DEFAULT_PROMPT)}
    for a in answers:  # the stub's rule: the share of the query's words the passage holds, on 0..1
        assert a["relevance"] == (1 if a["chunk_id"].endswith("a") else 0)
    failed = [json.loads(line) for line in (tmp_path / "answers.jsonl.errors.jsonl").read_text().splitlines()]
    assert len(failed) == summary["errors"] and {f["kind"] for f in failed} == {"malformed"}
    written = "".join(p.read_text() for p in tmp_path.iterdir() if p.is_file()) + result.stdout + result.stderr
    assert "sk-very-secret" not in written
    again = run_cli("judge", str(queue), "--base-url", url, "--model", "stub-judge", "--out",
                    str(tmp_path / "answers.jsonl"), "--now", "2026-12-04T00:00:00Z", "--format", "json", cwd=tmp_path)
    assert json.loads(again.stdout)["cached"] == summary["graded"]  # only the errors were asked again
    bad = run_cli("judge", str(queue), "--base-url", "ftp://x", "--model", "m", "--out", "a.jsonl", cwd=tmp_path)
    assert bad.code == 2 and bad.stderr.startswith("error: --base-url: an http:// or https:// URL")
