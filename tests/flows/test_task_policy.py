"""One task policy, applied in one place (``flows.faults.step``) to every task of the flows."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
from prefect import Task

import goldkeeper.flows
from goldkeeper.errors import InputError, StorageError
from goldkeeper.flows.faults import BACKOFF, retry_faults, step


def _tasks() -> list[tuple[str, Task]]:
    found = []
    for module in pkgutil.iter_modules(goldkeeper.flows.__path__):
        loaded = importlib.import_module(f"goldkeeper.flows.{module.name}")
        found += [(f"{module.name}.{name}", value) for name, value in vars(loaded).items()
                  if isinstance(value, Task) and value.fn.__module__ == loaded.__name__]
    return sorted(found, key=lambda pair: pair[0])


TASKS = _tasks()


def test_the_flows_have_tasks_partitioned_ones_among_them():
    names = {name for name, _ in TASKS}
    assert len(TASKS) >= 50 and {"scale.classify_one", "scale.score_part", "lifecycle.read_judgments"} <= names


@pytest.mark.parametrize(("name", "declared"), TASKS, ids=[name for name, _ in TASKS])
def test_every_task_retries_faults_with_backoff_and_keeps_content_out(name, declared):
    assert declared.retries == len(BACKOFF) and declared.retry_delay_seconds == list(BACKOFF), name
    assert declared.retry_condition_fn is retry_faults, name
    assert hasattr(declared.fn, "__wrapped__"), f"{name} is not declared with step"


def test_a_step_keeps_what_an_input_error_found_out_and_lets_a_fault_through():
    @step(timeout_seconds=5)
    def read(kind: str) -> None:
        if kind == "input":
            raise InputError("corpus.json", "is not a snapshot", line=3, field="chunks", found="PAYROLL jane 90000")
        raise StorageError("s3://bucket/corpus.json", "cannot be read")

    with pytest.raises(InputError) as refused:
        read.fn("input")
    assert "PAYROLL" not in str(refused.value) and "corpus.json:3" in str(refused.value)
    with pytest.raises(StorageError, match="cannot be read"):
        read.fn("fault")
    assert read.name == "read" and read.timeout_seconds == 5
