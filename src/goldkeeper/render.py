"""What people read: rich text renderings of results. Machines get ``--format json``."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.text import Text

from goldkeeper.core.validation import ValidationResult

__all__ = ["print_validation"]

#: Issues shown per code in text output; JSON output always has every one.
SHOWN_PER_CODE = 10


def print_validation(source: str, result: ValidationResult, console: Console | None = None) -> None:
    console = console or Console(highlight=False, soft_wrap=True)
    console.print(
        f"{source}: {result.labels} labels, {result.queries} queries, "
        f"{len(result.strata)} strata ({result.human_labels} human, "
        f"{result.synthetic_labels} synthetic labels)"
    )
    if not result.issues:
        console.print(Text("ok  no issues", style="green"))
        return
    shown: Counter[str] = Counter()
    totals = Counter(issue.code for issue in result.issues)
    for issue in result.issues:
        shown[issue.code] += 1
        if shown[issue.code] > SHOWN_PER_CODE:
            continue
        line = Text()
        if issue.severity == "error":
            line.append("error   ", style="bold red")
        else:
            line.append("warning ", style="yellow")
        line.append(f"[{issue.code}] ", style="dim")
        line.append(issue.message)
        console.print(line)
    for code, total in sorted(totals.items()):
        if total > SHOWN_PER_CODE:
            console.print(Text(f"        ... and {total - SHOWN_PER_CODE} more [{code}] (all of them with --format json)", style="dim"))
    errors = sum(1 for i in result.issues if i.severity == "error")
    warnings = len(result.issues) - errors
    verdict = Text("FAILED" if errors else "ok", style="bold red" if errors else "green")
    verdict.append(f"  {errors} error(s), {warnings} warning(s)", style="default")
    console.print(verdict)
