"""MkDocs hook (mkdocs.yml `hooks:`): adds the reference pages generated from the code (reference.py) to
the site at every build, so `mkdocs build --strict` fails on a page that links to a missing one and
nothing generated is ever committed stale."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

_GEN = Path(__file__).resolve().parent
_REPO = _GEN.parents[1]


def _reference() -> Any:
    if str(_REPO) not in sys.path:  # the checkout's kcoord, also where an older one is installed
        sys.path.insert(0, str(_REPO))
    spec = importlib.util.spec_from_file_location("kcoord_docs_reference", _GEN / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def on_files(files: Files, config: Any) -> Files:
    for path, text in _reference().pages().items():
        files.append(File.generated(config, path, content=text))
    return files
