"""What validating a judgment set found: the findings and the counts a report needs.

``goldkeeper.core.validation`` computes them; its ``Validator`` builds these models only when
asked for its result, so accumulating labels needs no pydantic.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

__all__ = ["Issue", "Severity", "ValidationResult"]

Severity = Literal["error", "warning"]


class Issue(BaseModel):
    """One finding about a judgment set."""

    severity: Severity
    code: str
    message: str


class ValidationResult(BaseModel):
    """Findings plus the counts a report needs."""

    issues: list[Issue] = Field(default_factory=list)
    queries: int = 0
    labels: int = 0
    human_labels: int = 0
    synthetic_labels: int = 0
    fingerprint: str | None = None
    strata: dict[str, int] = Field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when no finding is an error; warnings do not fail validation."""
        return not any(issue.severity == "error" for issue in self.issues)

    @property
    def error_codes(self) -> list[str]:
        return sorted({i.code for i in self.issues if i.severity == "error"})
