"""Static pages shipped in the package: the audit calculator (``goldkeeper audit --web``).

The page is one self-contained HTML file that computes in the browser and sends nothing
anywhere; its inputs travel in the link's fragment (after ``#``), which browsers never send
to a server, so a link can be shared without a back end.
"""

from __future__ import annotations

from importlib import resources
from typing import Any
from urllib.parse import quote

__all__ = ["LINK_FIELDS", "audit_page", "link_fragment"]

#: The calculator's inputs, as the link spells them, in the link's order.
LINK_FIELDS = {"n": "n", "metric": "m", "value": "v", "baseline": "b", "bound": "bound",
               "confidence": "conf", "alpha": "alpha", "power": "power"}


def audit_page() -> str:
    """The audit calculator: one self-contained HTML page, its arithmetic in the page."""
    return resources.files(__name__).joinpath("audit.html").read_text(encoding="utf-8")


def link_fragment(inputs: dict[str, Any]) -> str:
    """``#n=10&m=recall@5&...`` for the inputs that are given (None is left out)."""
    given = [f"{short}={quote(str(inputs[name]), safe='@')}" for name, short in LINK_FIELDS.items()
             if inputs.get(name) is not None]
    return "#" + "&".join(given) if given else ""
