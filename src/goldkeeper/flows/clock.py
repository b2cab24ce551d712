"""The flows' one clock: what time a run stamps on reports, queues and answers.

``SOURCE_DATE_EPOCH`` (the reproducible-builds convention: seconds since 1970, UTC) fixes it,
so a run repeated with it writes the same bytes; otherwise it is the current time. ISO 8601
in UTC with a ``Z``, as every goldkeeper file writes times.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone

__all__ = ["now"]


def now() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = datetime.fromtimestamp(int(epoch), tz=timezone.utc) if epoch else datetime.now(timezone.utc)
    return moment.isoformat().replace("+00:00", "Z")
