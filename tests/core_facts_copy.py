"""Rewrite the Python side's copies of the core's facts from the core itself:
core_benches.json, core_options.json and core_facts.json (its exit statuses
and the fields of a result line) from `cs-core --list --json` of the core
built without MPI.  Run it after changing a benchmark's declaration, the
option table, the statuses or core/harness/fields.h:

    .venv/bin/python -m tests.core_facts_copy

tests/unit/store/test_core_facts.py fails while a copy is stale."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.helpers import core_without_mpi

HERE = Path(__file__).resolve().parents[1] / "src" / "commscope"


def facts_text(listed: dict) -> str:
    """core_facts.json as committed: one field of a result line per line."""
    fields = ",\n".join(f"  {json.dumps(f)}" for f in listed["fields"])
    return (f'{{\n "statuses": {json.dumps(listed["statuses"])},\n'
            f' "fields": [\n{fields}\n ]\n}}\n')


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        core = core_without_mpi(Path(tmp))
        listed = json.loads(subprocess.run([str(core), "--list", "--json"], check=True,
                                           capture_output=True, text=True, timeout=30).stdout)
    texts = {"core_benches.json": json.dumps(listed["benchmarks"], indent=1) + "\n",
             "core_options.json": json.dumps(listed["options"], indent=1) + "\n",
             "core_facts.json": facts_text(listed)}
    for name, text in texts.items():
        path = HERE / name
        changed = path.read_text() != text
        if changed:
            path.write_text(text)
        print(f"{path}: {'rewritten' if changed else 'as it was'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
