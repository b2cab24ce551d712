"""What lets a flow run again after a crash repeat its first attempt (spec/storage.md, "Doing no
work twice"): the re-index record, created once; people's answers, named by what was answered;
a judgments version already current, not made twice."""

from __future__ import annotations

import hashlib

import pytest

from goldkeeper.errors import ChangedError, InputError
from goldkeeper.io.storage import (
    newest_answers_time,
    publish_answers,
    read_current_judgments,
    read_judge_step,
    reindex_record,
    write_judge_step,
    write_judgments_version,
)

SHA_A, SHA_B, CORPUS = "a" * 64, "b" * 64, "c" * 64


def test_the_first_attempt_s_record_comes_back_to_every_later_one(tmp_path):
    root = f"file://{tmp_path}"
    first = reindex_record(root, "wiki", CORPUS, "/c.json", "2026-12-01T00:00:00Z", SHA_A)
    again = reindex_record(root, "wiki", CORPUS, "/c.json", "2026-12-02T00:00:00Z", SHA_B)
    assert again == first and again["started_at"] == "2026-12-01T00:00:00Z" and again["judgments_sha256"] == SHA_A
    anew = reindex_record(root, "wiki", CORPUS, "/c.json", "2026-12-03T00:00:00Z", SHA_B, replace=True)
    assert reindex_record(root, "wiki", CORPUS, "/c.json", "2026-12-04T00:00:00Z", SHA_A) == anew
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_record_goldkeeper_did_not_write_is_refused_in_one_line(tmp_path):
    root = f"file://{tmp_path}"
    made = tmp_path / "reindex" / "wiki" / f"{CORPUS[:16]}.json"
    made.parent.mkdir(parents=True)
    made.write_text('{"suite": "wiki", "started_at": 3}\n')
    with pytest.raises(InputError, match=r"reindex/wiki/cccccccccccccccc\.json.*(corpus_url|started_at)"):
        reindex_record(root, "wiki", CORPUS, "/c.json", "2026-12-01T00:00:00Z", SHA_A)


def test_a_judge_step_is_kept_whole_and_read_back_and_a_hostile_one_is_refused_in_one_line(tmp_path):
    root = f"file://{tmp_path}"
    assert read_judge_step(root, "wiki", CORPUS) is None  # its judge made nothing
    made = {"from_sha256": SHA_A, "judgments_sha256": SHA_B, "audit": None, "failed": [], "plan": {"items": []},
            "summary": {"pairs": 3, "graded": 3}, "workload": {"queued": 1}}
    write_judge_step(root, "wiki", CORPUS, made)
    assert read_judge_step(root, "wiki", CORPUS) == made
    with pytest.raises(ValueError, match="judgments_sha256"):  # nothing half-made is kept
        write_judge_step(root, "wiki", CORPUS, {**made, "judgments_sha256": "nope"})
    assert read_judge_step(root, "wiki", CORPUS) == made
    kept = tmp_path / "reindex" / "wiki" / f"{CORPUS[:16]}.judge.json"
    kept.write_text('{"from_sha256": "a", "judgments_sha256": 7}\n')
    with pytest.raises(InputError, match=r"reindex/wiki/cccccccccccccccc\.judge\.json.*(from_sha256|judgments_sha256)"):
        read_judge_step(root, "wiki", CORPUS)


def test_the_same_answers_are_kept_once_with_the_time_they_were_first_given(tmp_path):
    root = f"file://{tmp_path}"
    rows = [{"item_id": "rq1:x", "chunk_id": "none", "relevance": 0, "labeled_by": "human:ana",
             "labeled_at": "2026-12-01T10:00:00.5Z"}]
    url, kept = publish_answers(root, "wiki", rows, rows[0]["labeled_at"])
    assert kept == rows
    later = [{**rows[0], "labeled_at": "2026-12-02T09:00:00Z"}]
    assert publish_answers(root, "wiki", later, later[0]["labeled_at"]) == (url, rows)
    assert newest_answers_time(root, "wiki") == "2026-12-01T10:00:00.5Z"
    other = [{**rows[0], "item_id": "rq1:y", "labeled_at": "2026-12-02T09:00:00Z"}]
    assert publish_answers(root, "wiki", other, other[0]["labeled_at"])[0] != url
    assert newest_answers_time(root, "wiki") == "2026-12-02T09:00:00Z"
    assert newest_answers_time(root, "none") is None


def test_a_version_already_current_is_not_made_twice_and_a_lost_swap_is_a_changed_error(tmp_path):
    root = f"file://{tmp_path}"
    write_judgments_version(root, "wiki", b"first\n", None)
    read = hashlib.sha256(b"first\n").hexdigest()
    made = write_judgments_version(root, "wiki", b"fixed\n", read)
    # the same change again, from the version read before it (a killed attempt's rerun)
    assert write_judgments_version(root, "wiki", b"fixed\n", read) == made
    assert len(list((tmp_path / "judgments" / "wiki" / "versions").iterdir())) == 2
    with pytest.raises(ChangedError, match="changed since it was read"):
        write_judgments_version(root, "wiki", b"another\n", read)
    assert read_current_judgments(root, "wiki")[0] == b"fixed\n"
