"""The GitHub Action (action.yml at the repository root), run here as GitHub runs it: each
`run:` step in bash with GitHub's flags, its inputs substituted into its env, GITHUB_STEP_SUMMARY,
GITHUB_OUTPUT, GITHUB_ACTION_PATH and RUNNER_TEMP set; and the file checked against the
GitHub Actions schema that check-jsonschema vendors (SchemaStore's)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
import yaml

from goldkeeper.core.gold import gold_query_id
from tests.conftest import REPO

ACTION = REPO / "action.yml"
QUERIES = [f"how do I configure feature {i}" for i in range(24)]


def _gold(tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps({"query": q, "relevant_doc_ids": [f"doc-{i}"]}) + "\n"
                            for i, q in enumerate(QUERIES)))
    return gold


def run_action(tmp_path, **inputs: str):
    """The action's steps as a runner runs them; setup-python (GitHub's own action) and the
    install step (pip install of this checkout, which the test environment already holds) are
    left out. Returns the gate step's exit code, the step summary, the outputs and stderr."""
    spec = yaml.safe_load(ACTION.read_text())
    values = {name: str(field.get("default", "")) for name, field in spec["inputs"].items()}
    values.update({name.replace("_", "-"): value for name, value in inputs.items()})
    for name, field in spec["inputs"].items():
        assert not field.get("required") or values[name], f"input {name} is required"
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs.txt"
    result = None
    for step in spec["runs"]["steps"]:
        if "uses" in step or step.get("id") == "install":
            continue
        assert "${{" not in step["run"], "inputs reach a script through env, never spliced into it"
        env = {**os.environ, "GITHUB_ACTION_PATH": str(REPO), "GITHUB_STEP_SUMMARY": str(summary),
               "GITHUB_OUTPUT": str(outputs), "RUNNER_TEMP": str(tmp_path / "runner")}
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        for key, value in (step.get("env") or {}).items():
            env[key] = re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: values[m.group(1)], str(value))
        script = tmp_path / f"step-{step['id']}.sh"
        script.write_text(step["run"])
        os.makedirs(env["RUNNER_TEMP"], exist_ok=True)
        result = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env=env,
                                cwd=tmp_path, capture_output=True, text=True, timeout=300)
    found = dict(line.split("=", 1) for line in outputs.read_text().splitlines()) if outputs.exists() else {}
    return result.returncode, summary.read_text() if summary.exists() else "", found, result.stderr


def test_the_action_file_is_valid_for_github():
    checked = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-actions",
                              str(ACTION)], capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    install = next(step for step in yaml.safe_load(ACTION.read_text())["runs"]["steps"] if step.get("id") == "install")
    assert install["run"] == 'python -m pip install --quiet "$GITHUB_ACTION_PATH"'


@pytest.mark.parametrize(("threshold", "code", "verdict"), [("0.5", 0, "PASS"), ("0.99", 1, "FAIL")])
def test_a_run_file_is_gated_with_the_summary_and_outputs(tmp_path, threshold, code, verdict):
    run = tmp_path / "run.jsonl"  # right on 20 of 24 queries
    run.write_text("".join(json.dumps({"query_id": gold_query_id(q), "ranking": [f"doc-{i}" if i % 6 else "other"]})
                           + "\n" for i, q in enumerate(QUERIES)))
    got, summary, outputs, stderr = run_action(tmp_path, gold_file=str(_gold(tmp_path)), run_file=str(run),
                                               min_recall5=threshold, gate_policy="point", python_version="")
    assert got == code, stderr
    assert outputs["verdict"] == verdict and outputs["exit-code"] == str(code)
    assert json.loads(open(outputs["report"]).read())["verdict"]["status"] == verdict
    assert summary.startswith(f"## {run}\n\n### {'✅' if code == 0 else '❌'} goldkeeper: {verdict}")
    assert f"**{verdict}** `recall@5:{threshold}`" in summary
    assert "| recall | 0.8333 [" in summary  # the interval table
    assert "**What 24 queries can resolve:**" in summary


class _Retriever(BaseHTTPRequestHandler):
    def do_GET(self):
        asked = parse_qs(urlparse(self.path).query)
        number = QUERIES.index(asked["q"][0])
        good = asked["mode"][0] == "hybrid" or number % 3
        body = json.dumps({"data": {"hits": [{"document_id": f"doc-{number}" if good else "other"}]}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _two_modes(tmp_path):
    """The action against a live retriever on loopback, in modes bm25 and hybrid."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Retriever)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/search?q={{query}}&mode={{mode}}"
        return run_action(tmp_path, gold_file=str(_gold(tmp_path)), url_template=url, modes="bm25,hybrid",
                          results_path="data.hits", id_field="document_id", min_mrr10="0.8", gate_policy="point",
                          python_version="")
    finally:
        server.shutdown()


def test_a_live_retriever_in_two_modes_gets_the_significance_verdicts(tmp_path):
    got, summary, outputs, stderr = _two_modes(tmp_path)
    assert got == 1, stderr  # bm25 finds 16 of 24: mrr@10 0.667 < 0.8
    assert outputs["verdict"] == "FAIL"
    assert "## bm25\n\n### ❌ goldkeeper: FAIL" in summary and "## hybrid\n\n### ✅ goldkeeper: PASS" in summary
    assert "### goldkeeper compare: baseline `bm25`" in summary
    assert re.search(r"\| mrr@10 \| `hybrid` \| \+0\.3333 \| 8 \| [0-9.]+ \| 0\.0078 \| \*\*better\*\* \|", summary), summary


def test_the_step_summary_reads_as_tables_in_a_browser(tmp_path, browser):
    """The summary as GitHub shows it: GitHub-flavoured markdown (markdown-it, tables on)
    rendered in Chromium; screenshot 13-action-step-summary.png."""
    from markdown_it import MarkdownIt

    from tests.browser import new_page, shot

    summary = _two_modes(tmp_path)[1]
    html = MarkdownIt("commonmark").enable("table").render(summary)
    page = new_page(browser, 1100, 900)
    page.set_content(f"<html><body style='font: 14px system-ui; max-width: 1000px; margin: 24px'>{html}</body></html>")
    assert page.locator("h3").all_inner_texts()[:2] == ["❌ goldkeeper: FAIL", "✅ goldkeeper: PASS"]
    assert page.locator("table").count() == 3  # bm25's metrics, hybrid's, the comparison
    assert page.locator("table >> nth=2").locator("strong", has_text="better").count() == 16
    shot(page, "13-action-step-summary")
    page.close()


def test_refused_input_is_an_error_verdict_with_the_message_in_the_summary(tmp_path):
    (tmp_path / "run.jsonl").write_text(json.dumps({"query_id": "q", "ranking": ["d"]}) + "\n")
    got, summary, outputs, _ = run_action(tmp_path, gold_file=str(tmp_path / "missing.jsonl"),
                                          run_file=str(tmp_path / "run.jsonl"), python_version="")
    assert got == 2
    assert outputs == {"verdict": "ERROR", "report": outputs["report"], "exit-code": "2"}
    assert "### ❌ goldkeeper: ERROR" in summary and "missing.jsonl" in summary
