"""The KNOWN table (tests/oracle/known.py) cites rows of docs/compat.md that exist: a row removed or
renamed there makes its difference a finding again instead of staying silently excused."""

from __future__ import annotations

import re

import pytest

from tests.kcoord_process import REPO
from tests.oracle.known import KNOWN

pytestmark = pytest.mark.xdist_group("kafka_oracle")


def compat_rows() -> set[str]:
    """`Section | first cell` for every table row of docs/compat.md (section = the nearest heading)."""
    rows: set[str] = set()
    section = ""
    for line in (REPO / "docs" / "compat.md").read_text().splitlines():
        if heading := re.match(r"#{2,3} (.+)", line):
            section = heading.group(1).strip()
        elif line.startswith("| ") and not set(line) <= set("|- "):
            rows.add(f"{section} | {line.split(' | ')[0].removeprefix('| ').strip()}")
    return rows


@pytest.mark.parametrize("row", sorted({row.compat for row in KNOWN}))
def test_every_known_difference_names_a_compat_row(row: str) -> None:
    assert row in compat_rows(), f"docs/compat.md has no row {row!r}"
