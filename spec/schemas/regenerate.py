"""Write spec/schemas/*.json from goldkeeper's models: python spec/schemas/regenerate.py

tests/unit/test_schemas.py fails when the committed files and the models disagree.
"""

import json
from pathlib import Path

from goldkeeper.models import export_schemas

HERE = Path(__file__).resolve().parent


def render(schema: dict) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


if __name__ == "__main__":
    for name, schema in export_schemas().items():
        (HERE / name).write_text(render(schema), encoding="utf-8")
        print(f"wrote spec/schemas/{name}")
