"""The runnable code blocks of the documentation: a fenced block right after the line
`<!-- kcoord-docs: run -->` (invisible in the built site) is executed by tests/docs/test_site.py.

* ```python: a script, run with this interpreter;
* ```console: the `$ ` lines are commands (bash, `kcoord` on PATH); the other lines show output;
* ```sh: the whole block is one bash script;
* a ```python block after `<!-- kcoord-docs: pytest -->` is a test module, run by pytest with
  kcoord's plugin (the fixtures start their own server).

The examples address the server as the docs do, `localhost:9092` (Kafka) and `localhost:9644` (HTTP);
the test replaces those with the addresses of the server it started.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

MARKER = re.compile(r"^<!-- kcoord-docs: (run|pytest) -->\s*$")
FENCE = re.compile(r"^```(\w+)")
KINDS = {("run", "python"), ("run", "console"), ("run", "sh"), ("pytest", "python")}


@dataclass(frozen=True, slots=True)
class Block:
    page: str  # path under docs/
    line: int  # the fence's line, 1-based
    mode: str  # run | pytest
    lang: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    def script(self) -> str:
        """What bash runs for a console block: its `$ ` lines."""
        if self.lang != "console":
            return self.text
        return "\n".join(line[2:] for line in self.text.splitlines() if line.startswith("$ "))


def blocks(docs: Path) -> list[Block]:
    """The pages under `docs` and the README beside it (the front page, outside the site)."""
    found: list[Block] = []
    for path in sorted(docs.rglob("*.md")):
        found += page_blocks(path.relative_to(docs).as_posix(), path.read_text())
    readme = docs.parent / "README.md"
    return found + page_blocks("../README.md", readme.read_text())


def page_blocks(page: str, text: str) -> list[Block]:
    lines = text.splitlines()
    out = []
    for n, line in enumerate(lines):
        marker = MARKER.match(line)
        if marker is None:
            continue
        fence = FENCE.match(lines[n + 1]) if n + 1 < len(lines) else None
        if fence is None or (marker.group(1), fence.group(1)) not in KINDS:
            raise ValueError(f"{page}:{n + 1}: the marker must sit right above a python/console/sh fence")
        end = lines.index("```", n + 2)
        out.append(Block(page, n + 2, marker.group(1), fence.group(1), "\n".join(lines[n + 2 : end]) + "\n"))
    return out
