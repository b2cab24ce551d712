"""What waits for a person, counted one way, and a reviewer's name as a form takes it."""

from __future__ import annotations

import pytest

from goldkeeper.core.rejudge import REVIEWER_MAX, Waiting, reviewer_problem


@pytest.mark.parametrize(("actions", "said"), [
    ([], "nothing waits for a person"),
    (["rejudge"], "1 waits for a person (1 to re-judge)"),
    (["review", "review"], "2 wait for a person (2 to confirm)"),
    (["rejudge"] * 5 + ["review"] * 2, "7 wait for a person (5 to re-judge, 2 to confirm)"),
], ids=["none", "one", "only-to-confirm", "both"])
def test_waiting_counts_items_by_kind_and_says_so(actions, said):
    waiting = Waiting.of({"item_id": str(n), "action": action} for n, action in enumerate(actions))
    assert str(waiting) == said
    assert waiting.total == len(actions) and waiting.review == actions.count("review")


def test_an_item_without_an_action_is_one_to_re_judge():
    assert Waiting.of([{"item_id": "a"}]) == Waiting(1, 0)  # queues written before actions had one


@pytest.mark.parametrize(("name", "problem"), [
    ("alice smith", None),
    ("  alice   smith ", None),
    ("Zoë O'Brien-Łukasz", None),
    ("", "your name is empty; type it: it is recorded with each answer as human:<your name>"),
    ("   ", "your name is empty; type it: it is recorded with each answer as human:<your name>"),
    ("ali\x07ce", "your name holds a control character ('\\x07'); type it again without it"),
    ("alice\n", "your name holds a control character ('\\n'); type it again without it"),
    ("x" * (REVIEWER_MAX + 1), f"your name is {REVIEWER_MAX + 1} characters long; at most {REVIEWER_MAX} are recorded"),
], ids=["plain", "spaces", "accents", "empty", "blank", "bell", "newline", "too-long"])
def test_a_reviewer_name_is_refused_in_words_or_taken(name, problem):
    assert reviewer_problem(name) == problem
