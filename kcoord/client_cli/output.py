"""What every command-line tool prints the same way: aligned tables, JSON documents, and usage errors
as one line with exit status 2."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

__all__ = ["MISSING", "ToolParser", "cell", "print_json", "print_table"]

MISSING = "-"  # ConsumerGroupCommand.MISSING_COLUMN_VALUE


def cell(value: Any) -> str:
    return MISSING if value is None else str(value)


def print_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Left-aligned columns as wide as their widest cell, one space apart; None prints as "-"."""
    cells = [list(headers), *([cell(v) for v in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        print(" ".join(value.ljust(width) for value, width in zip(row, widths, strict=True)).rstrip())


def print_json(document: Any) -> None:
    print(json.dumps(document, indent=2))


class ToolParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line (`prog: message (see --help)`), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see --help)\n")
