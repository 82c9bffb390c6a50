"""Issue 26, item 0, and issue 32, item 1: one installed package, `kcoord`, whose code lives at the path
it is imported by.

The source tree is the installed tree (`kcoord/protocol/errors.py` is `kcoord.protocol.errors`): no link
inside `kcoord/` and no package mapping. The repository's top level keeps `coordinator`, `protocol` and
`storage` as links into `kcoord/` for readers; importing through them is refused, so no module can load
twice under two names. These tests read every file, walk the tree and build the wheel itself.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DESIGN_FOLDERS = ("protocol", "storage", "partition_log", "coordinator", "pipeline")
TOP_LEVEL_LINKS = ("coordinator", "protocol", "storage")
TOP_LEVEL_IMPORT = re.compile(rf"^\s*(?:from|import)\s+(?:{'|'.join(DESIGN_FOLDERS)})(?:[.\s]|$)", re.M)


def _python_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    return [REPO / name for name in listed if not (REPO / name).is_symlink()]


def test_no_file_imports_a_design_folder_as_a_top_level_package() -> None:
    offenders = [
        f"{path.relative_to(REPO)}: {match.group(0).strip()}"
        for path in _python_files()
        for match in TOP_LEVEL_IMPORT.finditer(path.read_text())
    ]
    assert offenders == []


def test_the_package_tree_has_real_folders_and_no_links() -> None:
    links = [str(path.relative_to(REPO)) for path in (REPO / "kcoord").rglob("*") if path.is_symlink()]
    assert links == []
    for folder in DESIGN_FOLDERS:
        assert (REPO / "kcoord" / folder / "__init__.py").is_file(), folder


def test_the_top_level_links_point_into_kcoord_and_refuse_to_be_imported() -> None:
    for name in TOP_LEVEL_LINKS:
        link = REPO / name
        assert link.is_symlink() and link.resolve() == REPO / "kcoord" / name, name
        run = subprocess.run(
            [sys.executable, "-c", f"import {name}"], cwd=REPO, capture_output=True, text=True, timeout=60
        )
        assert run.returncode == 1, name
        assert f"import kcoord.{name}" in run.stderr.splitlines()[-1], run.stderr


def test_the_wheel_installs_only_kcoord_and_runs_from_it(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(tmp_path / "dist"), str(REPO)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("kcoord-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"kcoord", wheel.name.split("-py")[0] + ".dist-info"}
    for folder in DESIGN_FOLDERS:
        assert f"kcoord/{folder}/__init__.py" in names, folder
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt")))
    assert b"kcoord = kcoord.wiring.cli:main" in entry_points

    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    installed = {p.name for p in target.iterdir() if not p.name.endswith(".dist-info")}
    assert installed - {"bin"} == {"kcoord"}  # bin: the `kcoord` script
    probe = (
        "import importlib.util, kcoord.wiring.app as app, kcoord.pipeline\n"
        "print(app.__file__)\n"
        "print([n for n in ('protocol', 'storage', 'partition_log', 'coordinator', 'pipeline')"
        " if importlib.util.find_spec(n)])\n"
    )
    # The installed copy comes first on the path (PYTHONPATH precedes the venv's editable kcoord).
    run = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(target)},
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    app_file, leaked = run.stdout.splitlines()
    assert app_file.startswith(str(target / "kcoord" / "wiring"))
    assert leaked == "[]"
