"""Issue 26, class 7: a secret never appears in a message, whatever its bytes; a query is
never read as an option by a command retriever; suite names never alias."""

from __future__ import annotations

import json
import sys

import pytest

from goldkeeper.io.storage import suite_slug
from tests.conftest import run_cli


@pytest.fixture
def judgments(tmp_path):
    path = tmp_path / "judgments.jsonl"
    path.write_text(json.dumps({"query_id": "q1", "query": "-oFILE", "doc_uri": "d1", "relevance": 1}) + "\n")
    return path


@pytest.mark.parametrize("secret", ["Bearer s3cret\r\nX-Evil: 1", "s3cret\nline", "s3cret\x1b[2J", "s3cret\x7f"])
def test_a_header_secret_with_control_characters_is_refused_without_showing_it(judgments, tmp_path, monkeypatch,
                                                                                 secret):
    monkeypatch.setenv("RETRIEVER_TOKEN", secret)
    result = run_cli("eval", "-j", str(judgments), "--url-template", "http://127.0.0.1:9/s?q={query}",
                     "--header-env", "Authorization=RETRIEVER_TOKEN", "--out", str(tmp_path / "out"))
    assert (result.code, result.stderr) == (2, "error: --header-env Authorization=RETRIEVER_TOKEN: the value of "
                                               "RETRIEVER_TOKEN holds a control character (CR, LF, NUL...), which an "
                                               "HTTP header cannot carry; it is not shown here\n")
    assert "s3cret" not in result.stdout + result.stderr


def test_a_bad_header_name_is_refused(judgments, monkeypatch):
    monkeypatch.setenv("RETRIEVER_TOKEN", "fine")
    result = run_cli("eval", "-j", str(judgments), "--url-template", "http://127.0.0.1:9/s?q={query}",
                     "--header-env", "Bad Name=RETRIEVER_TOKEN")
    assert result.code == 2 and "'Bad Name' is not an HTTP header name" in result.stderr


@pytest.mark.parametrize("template", [["sort", "{query}"], ["search", "-k", "{k}", "{query}"], ["s", "{query_id}x"],
                                      ["retrieve", "--mode", "{mode}", "--q", "{query}", "--json"]])
def test_a_template_that_could_pass_a_query_as_an_option_is_refused(judgments, tmp_path, template):
    """Only the data's placeholders ({query}, {query_id}) must follow '--' or be attached; the
    last template is rag-eval-gate's README line, refused for its {query} (spec/eval.md)."""
    result = run_cli("eval", "-j", str(judgments), "--backend", "command", "--command", json.dumps(template),
                     "--modes", "a", "--out", str(tmp_path / "out"))
    position = next(i for i, part in enumerate(template) if part.startswith(("{query}", "{query_id}")))
    assert result.code == 2
    assert result.stderr.startswith(f"error: --command: argument {position} ({template[position]}) starts with a "
                                    "placeholder before any '--'"), result.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


USER_VALUES = """
import json, os, sys
assert sys.argv[1] in ("bm25", "dense") and sys.argv[2:] == ["7", "--", os.environ["GOLDKEEPER_QUERY"]], sys.argv
print(json.dumps([{"id": "d1" if sys.argv[1] == "bm25" else "zz", "score": 1.0}]))
"""


def test_the_users_own_values_may_stand_anywhere_in_a_template(judgments, tmp_path):
    """{mode} and {k} come from the command line, not the data: anywhere, before '--' too."""
    script = tmp_path / "search.py"
    script.write_text(USER_VALUES)
    result = run_cli("eval", "-j", str(judgments), "--backend", "command", "--command",
                     json.dumps([sys.executable, str(script), "{mode}", "{k}", "--", "{query}"]),
                     "--modes", "bm25,dense", "-k", "7", "--format", "json", "--out", str(tmp_path / "out"))
    assert result.code in (0, 1), result.stderr
    systems = json.loads(result.stdout)["systems"]
    assert systems["bm25"]["retrieval"]["errors"] == 0 and systems["dense"]["retrieval"]["errors"] == 0
    assert systems["bm25"]["metrics"]["recall@7"]["value"] > systems["dense"]["metrics"]["recall@7"]["value"]


SEARCH = """
import json, os, sys
assert sys.argv[1:3] == ["--", os.environ["GOLDKEEPER_QUERY"]], sys.argv
print(json.dumps([{"id": "d1", "score": 1.0}]))
"""


def test_a_query_beginning_with_a_dash_reaches_the_program_as_text(judgments, tmp_path):
    script = tmp_path / "search.py"
    script.write_text(SEARCH)
    for template in ([sys.executable, str(script), "--", "{query}"], f"{sys.executable} {script} -- {{query}}"):
        command = template if isinstance(template, str) else json.dumps(template)
        result = run_cli("eval", "-j", str(judgments), "--backend", "command", "--command", command, "-k", "1",
                         "--out", str(tmp_path / "out"), "--format", "json", "--gate", "recall@1:1")
        assert result.code == 0, result.stderr
        assert json.loads(result.stdout)["systems"]["command"]["metrics"]["recall@1"]["value"] == 1.0


def test_suite_names_that_differ_only_in_case_or_punctuation_never_share_a_slug():
    names = ["a-b", "A/B", "a b", "A-B", "a_b", "a--b", "help-center", "Help Center"]
    slugs = [suite_slug(name) for name in names]
    assert len(set(slugs)) == len(names)
    assert suite_slug("a-b") == "a-b" and suite_slug("help-center") == "help-center"  # a slug names itself
    assert all(slug == slug.lower() and set(slug) <= set("abcdefghijklmnopqrstuvwxyz0123456789-") for slug in slugs)


def test_two_aliasing_suites_keep_their_own_reports(tmp_path):
    from goldkeeper.io.storage import read_suite, write_suite
    from goldkeeper.models.suite import SuiteConfig

    root = str(tmp_path / "store")
    write_suite(root, SuiteConfig(suite="A/B", runs=["s3://b/one.jsonl"]))
    write_suite(root, SuiteConfig(suite="a-b", runs=["s3://b/two.jsonl"]))
    assert read_suite(root, "A/B").runs == ["s3://b/one.jsonl"]
    assert read_suite(root, "a-b").runs == ["s3://b/two.jsonl"]
