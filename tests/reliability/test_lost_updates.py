"""Issue 26, class 3: no lost update. Two in-place writers of one judgments file, started
together as real processes: either both changes are in the file, or the writer that would
have overwritten the other's change failed, said so, and wrote nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

LIFECYCLE = Path(__file__).resolve().parents[2] / "src" / "goldkeeper" / "examples" / "lifecycle"
CHANGED = ("error: judgments.jsonl: was changed by another writer since goldkeeper read it; nothing was written "
           "(run the command again on its new contents)\n")
PAIRS = 6
PADDING = 60_000  # labels of other queries: reading and writing take long enough for the two to overlap


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory):
    """Fixed judgments with their queue, and the reviewers' answers split in two files, one per
    reviewer, for different items."""
    folder = tmp_path_factory.mktemp("lost-updates")
    rows = (LIFECYCLE / "judgments.jsonl").read_text()
    padding = "".join(json.dumps({"query_id": f"pad{i}", "doc_uri": f"kb://pad/{i}", "relevance": 1}) + "\n"
                      for i in range(PADDING))
    (folder / "judgments.jsonl").write_text(rows + padding)
    assert run_cli("snapshot", str(LIFECYCLE / "chunks-v2.jsonl"), "--chunker", "sentences/v2",
                   "-o", str(folder / "v2.json")).code == 0
    assert run_cli("drift", "-j", "judgments.jsonl", "-c", "v2.json", "--fix", "--in-place", "--queue", "queue.jsonl",
                   "--max-invalid", "1", cwd=folder).code == 0
    answers = [json.loads(line) for line in (LIFECYCLE / "answers.jsonl").read_text().splitlines()]
    items = sorted({a["item_id"] for a in answers})
    for name, mine in (("ana", items[::2]), ("bo", items[1::2])):
        (folder / f"answers-{name}.jsonl").write_text("".join(
            json.dumps({**a, "labeled_by": f"human:{name}"}) + "\n" for a in answers if a["item_id"] in mine))
    return folder


def _apply(folder: Path, who: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "goldkeeper", "queue", "apply", "-j", "judgments.jsonl",
                             "-q", "queue.jsonl", "-a", f"answers-{who}.jsonl", "-c", "v2.json"],
                            cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)


def test_two_in_place_writers_never_lose_an_update(reviewed, tmp_path):
    losers = 0
    for pair in range(PAIRS):
        folder = tmp_path / f"pair{pair}"
        folder.mkdir()
        for name in ("judgments.jsonl", "queue.jsonl", "v2.json", "answers-ana.jsonl", "answers-bo.jsonl"):
            shutil.copy(reviewed / name, folder / name)
        writers = {who: _apply(folder, who) for who in ("ana", "bo")}
        done = {who: (p.wait(timeout=300), p.stderr.read().decode()) for who, p in writers.items()}
        for p in writers.values():
            p.stdout.close()
            p.stderr.close()
        labels = [json.loads(line) for line in (folder / "judgments.jsonl").read_text().splitlines()]
        by = {label.get("labeled_by") for label in labels}
        for who, (code, stderr) in done.items():
            if code == 0:
                assert f"human:{who}" in by, f"pair {pair}: {who} exited 0 but the file lost their answers"
            else:
                assert (code, stderr) == (2, CHANGED), stderr
                assert f"human:{who}" not in by
                losers += 1
        assert any(code == 0 for code, _ in done.values())
        assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    # Started together, the two overlap: without the check one of them silently lost its change
    assert losers >= 1


def test_an_in_place_rewrite_on_s3_refuses_an_object_changed_since_it_was_read(s3):
    """Object stores have no lock; the content is compared just before the put (spec/reliability.md)."""
    import hashlib

    from goldkeeper.errors import StorageError
    from goldkeeper.io.files import read_bytes, write_bytes_atomic

    url = f"{s3}/in-place/judgments.jsonl"
    write_bytes_atomic(url, b"read\n")
    seen = hashlib.sha256(read_bytes(url)).hexdigest()
    write_bytes_atomic(url, b"another writer\n")  # meanwhile
    with pytest.raises(StorageError, match="was changed by another writer since goldkeeper read it"):
        write_bytes_atomic(url, b"mine\n", unchanged=seen)
    assert read_bytes(url) == b"another writer\n"
    write_bytes_atomic(url, b"mine\n", unchanged=hashlib.sha256(b"another writer\n").hexdigest())
    assert read_bytes(url) == b"mine\n"


def test_on_s3_a_change_between_the_check_and_the_put_fails_the_conditional_put(s3, monkeypatch):
    """The race forced: another writer replaces the object after goldkeeper compared its
    content and before it puts. The put is conditional on the ETag it compared (If-Match), so
    it fails and the other writer's object stays."""
    import hashlib

    from goldkeeper.errors import StorageError
    from goldkeeper.io import files
    from goldkeeper.io.files import read_bytes, write_bytes_atomic

    url = f"{s3}/in-place/raced.jsonl"
    write_bytes_atomic(url, b"read\n")
    seen = hashlib.sha256(b"read\n").hexdigest()
    etag = files._etag
    calls = []

    def check_then_lose_the_race(target):
        found = etag(target)
        calls.append(found)
        if len(calls) == 2:  # the last look before the put
            files._put(target, b"another writer\n")
        return found

    monkeypatch.setattr(files, "_etag", check_then_lose_the_race)
    with pytest.raises(StorageError, match="was changed by another writer since goldkeeper read it"):
        write_bytes_atomic(url, b"mine\n", unchanged=seen)
    monkeypatch.undo()
    assert read_bytes(url) == b"another writer\n"


def test_two_in_place_writers_on_s3_never_lose_an_update(reviewed, s3):
    """Real processes against moto's server: the same pairs as on local storage, the files on
    S3. The lock is local only; the conditional put decides."""
    import fsspec

    fs = fsspec.filesystem("s3")
    losers = 0
    for pair in range(3):
        root = f"{s3}/lost-updates/pair{pair}"
        for name in ("judgments.jsonl", "queue.jsonl", "v2.json"):
            fs.put_file(str(reviewed / name), f"{root}/{name}")
        writers = {who: subprocess.Popen(
            [sys.executable, "-m", "goldkeeper", "queue", "apply", "-j", f"{root}/judgments.jsonl", "-q",
             f"{root}/queue.jsonl", "-a", str(reviewed / f"answers-{who}.jsonl"), "-c", f"{root}/v2.json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL) for who in ("ana", "bo")}
        done = {who: (p.wait(timeout=300), p.stderr.read().decode()) for who, p in writers.items()}
        for p in writers.values():
            p.stdout.close()
            p.stderr.close()
        fs.invalidate_cache()
        labels = [json.loads(line) for line in fs.cat_file(f"{root}/judgments.jsonl").decode().splitlines()]
        by = {label.get("labeled_by") for label in labels}
        for who, (code, stderr) in done.items():
            if code == 0:
                assert f"human:{who}" in by, f"pair {pair}: {who} exited 0 but the object lost their answers"
            else:
                assert code == 2 and "was changed by another writer since goldkeeper read it" in stderr, stderr
                assert f"human:{who}" not in by
                losers += 1
        assert any(code == 0 for code, _ in done.values())
    assert losers >= 1
