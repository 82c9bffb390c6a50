"""The documentation site: `mkdocs build --strict` passes (no broken link, missing page or anchor), the
generated reference lists every `kcoord serve` flag, every metric the server registers and every
subcommand, and the docs' runnable examples (tests/docs/blocks.py) work against a real kcoord."""

from __future__ import annotations

import argparse
import html
import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcoord.cluster.cluster_metrics import ClusterCollector, ClusterSources
from kcoord.wiring import cli
from kcoord.wiring.config import ENV_PREFIX, add_serve_arguments
from tests.docs.blocks import Block, blocks
from tests.kcoord_process import REPO, KcoordServer

DOCS = REPO / "docs"
BUILD_TIMEOUT_S = 600
BLOCK_TIMEOUT_S = 180
DOC_KAFKA, DOC_HTTP = "localhost:9092", "localhost:9644"
HTTP_LINE = re.compile(r"http endpoint on (\S+):(\d+)")


def _env(**extra: str) -> dict[str, str]:
    """The examples run as a reader would run them: none of this run's pytest or kcoord variables."""
    rest = os.environ.get("PYTHONPATH")
    path = str(REPO) if not rest else f"{REPO}{os.pathsep}{rest}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "KCOORD_"))}
    return {**env, "PYTHONPATH": path, "NO_MKDOCS_2_WARNING": "1", **extra}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"), "-d", str(out)],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    assert "WARNING" not in done.stderr, done.stderr
    return out


def _rows(page: Path) -> list[str]:
    """The table rows of a built page, as text."""
    rows = re.findall(r"<tr>(.*?)</tr>", page.read_text(), flags=re.S)
    return [html.unescape(re.sub(r"<[^>]+>", " ", row)) for row in rows]


def test_every_page_of_the_nav_is_built(site: Path) -> None:
    for page in ("index.html", "getting-started/index.html", "compat/index.html", "architecture/index.html"):
        assert (site / page).is_file(), page
    assert (site / "architecture" / "rooms.svg").is_file()  # the picture architecture.md shows


def test_flags_reference_lists_every_serve_flag_with_its_variable(site: Path) -> None:
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    flags = [o for a in parser._actions for o in a.option_strings if o.startswith("--") and o != "--help"]
    rows = _rows(site / "reference" / "serve-flags" / "index.html")
    assert len(flags) > 50
    for flag in flags:
        env = ENV_PREFIX + flag.removeprefix("--").replace("-", "_").upper()
        matching = [row for row in rows if row.split()[:1] == [flag]]
        assert len(matching) == 1, f"{flag}: {len(matching)} rows"
        assert env in matching[0], (flag, matching[0])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KcoordServer, str]]:
    data = tmp_path_factory.mktemp("docs-server")
    proc = KcoordServer(
        data / "data", "--http-listen", "127.0.0.1:0", "--enable-test-controls", "--fsync", "never",
        log_path=data / "server.log",
    )  # fmt: skip
    proc.start()
    try:
        match = proc.wait_for(HTTP_LINE)
        yield proc, f"{match.group(1)}:{match.group(2)}"
    finally:
        proc.stop()


def test_metrics_reference_lists_every_family_the_server_serves(
    site: Path, server: tuple[KcoordServer, str]
) -> None:
    with urllib.request.urlopen(f"http://{server[1]}/metrics", timeout=10) as answer:
        scraped = answer.read().decode()
    served = set(re.findall(r"^# TYPE (kcoord_\w+) (\w+)$", scraped, flags=re.M))
    cluster = ClusterCollector(ClusterSources(dict, lambda: 0, dict, dict, lambda: True))
    served |= {(family.name, family.type) for family in cluster.collect()}
    rows = _rows(site / "reference" / "metrics" / "index.html")
    assert len(served) > 30
    for name, kind in served:
        shown = name + "_total" if kind == "counter" and not name.endswith("_total") else name
        matching = [row for row in rows if row.split()[:1] == [shown]]
        assert len(matching) == 1, f"{shown}: {len(matching)} rows"
        assert f" {kind} " in matching[0], (shown, matching[0])


def test_metrics_reference_names_each_family_s_labels(site: Path) -> None:
    rows = {
        row.split()[0]: row.replace(",", " ") for row in _rows(site / "reference" / "metrics" / "index.html")
    }
    assert rows["kcoord_group_lag_offsets"].split()[2:5] == ["group", "topic", "partition"]
    assert rows["kcoord_requests_total"].split()[2:4] == ["api", "version"]
    assert rows["kcoord_cluster_lease_renewals_total"].split()[2:4] == ["lease", "result"]


def test_the_metrics_page_explains_every_family(site: Path) -> None:
    """docs/metrics.md, written by hand, says what each family means: one it misses is a new metric
    nobody described (cluster mode's are one row, `kcoord_cluster_*`)."""
    generated = [row.split()[0] for row in _rows(site / "reference" / "metrics" / "index.html")[1:]]
    explained = (DOCS / "metrics.md").read_text()
    assert len(generated) > 30
    for name in generated:
        names = (f"`{name}`", f"`{name.removesuffix('_total')}`")
        assert name.startswith("kcoord_cluster_") or any(n in explained for n in names), name


def test_commands_reference_has_every_subcommand_s_help(site: Path) -> None:
    sub = next(a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction))
    text = html.unescape(re.sub(r"<[^>]+>", "", (site / "reference" / "commands" / "index.html").read_text()))
    assert len(sub.choices) >= 10
    for command in sub.choices:
        assert f"$ kcoord {command} --help\nusage: kcoord {command}" in text, command


def _pages() -> list[str]:
    return sorted({block.page for block in blocks(DOCS)})


def test_the_docs_have_runnable_examples() -> None:
    found = blocks(DOCS)
    assert {b.page for b in found} >= {"getting-started.md", "clients.md", "testing.md", "../README.md"}
    assert {(b.mode, b.lang) for b in found} >= {("run", "python"), ("run", "console"), ("pytest", "python")}


@pytest.mark.parametrize("page", _pages())
def test_the_examples_of_a_page_run(page: str, server: tuple[KcoordServer, str], tmp_path: Path) -> None:
    proc, http = server
    request = urllib.request.Request(f"http://{http}/v1/test/reset", method="POST")
    urllib.request.urlopen(request, timeout=30).close()  # each page starts from an empty server
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "kcoord").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kcoord "$@"\n')
    (shim / "kcoord").chmod(0o755)
    env = _env(PATH=f"{shim}{os.pathsep}{os.environ['PATH']}")
    for n, block in enumerate(b for b in blocks(DOCS) if b.page == page):
        _run(block, n, proc.bootstrap, http, tmp_path, env)


def _run(block: Block, n: int, bootstrap: str, http: str, tmp: Path, env: dict[str, str]) -> None:
    text = block.script().replace(DOC_KAFKA, bootstrap).replace(DOC_HTTP, http)
    if block.mode == "pytest":
        path = tmp / f"test_docs_example_{n}.py"
        path.write_text(text)
        # pytest-timeout inside: a hung example fails with the stack it hung in, before our own bound
        inner = ["-p", "no:cacheprovider", "-p", "no:xdist", f"--timeout={BLOCK_TIMEOUT_S // 2}"]
        argv = [sys.executable, "-m", "pytest", "-q", *inner, path.name]
    elif block.lang == "python":
        path = tmp / f"example_{n}.py"
        path.write_text(text)
        argv = [sys.executable, str(path)]
    else:
        argv = ["bash", "-euo", "pipefail", "-c", text]
    try:
        done = subprocess.run(
            argv,
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"{block.where} still running after {exc.timeout} s:\n{exc.stdout!r}") from None
    assert done.returncode == 0, f"{block.where} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
