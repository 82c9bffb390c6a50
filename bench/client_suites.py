"""The clients' own integration suites against one kcoord node and against three (issue 35 item 7).

    .venv/bin/python -m bench.client_suites [--suites aiokafka,kafka-python] [--nodes 1,3]
        [--aiokafka-src DIR] [--kafka-python-src DIR] [--timeout 120] [--json out.json] [-k EXPR]

Run by hand (not in `make test`). For each suite it gets the tests of the installed client's version,
cached under ~/.cache/kcoord/client-suites:

* aiokafka: its PyPI sdist carries no tests, so the GitHub release tarball of tag v<version>
  (codeload.github.com); where GitHub cannot be reached, `--aiokafka-src` names a git clone (the tag is
  taken with `git archive`) or an unpacked tree.
* kafka-python: its PyPI sdist (`pip download --no-binary`), which carries `test/integration` but not
  `test/__init__.py` nor `test/service.py` (the process runner the fixtures import); the runner writes
  an empty `__init__.py` and a `service.py` of its own holding only the external-broker stand-in
  (`KAFKA_URI` makes the fixtures use it; spawning a broker is refused). `--kafka-python-src` takes a
  git clone or tree instead.

Then for each node count it starts the servers: one `kcoord serve` on its local log, or PostgreSQL
(tests/postgres.py), `kcoord cluster init` and three `kcoord serve --cluster` nodes (tests/cluster/nodes.py),
and runs the suite pointed at the first node, each suite with the broker address its fixtures read:

* aiokafka: its `kafka_server` fixture starts a Docker container; a conftest appended to the cached copy
  replaces it (and the container-only fixtures: ACLs, SCRAM users, Kerberos, SSL certificates) with the
  node's address, `--docker-image kcoord:<kafka version>` only naming the version its
  `kafka_versions` markers compare against. Tests that need the container's SSL or SASL listeners are
  deselected (test_sasl.py, test_helpers.py, `-k "not ssl"`), on every node count alike.
* kafka-python: `KAFKA_URI=PLAINTEXT://host:port` and `KAFKA_VERSION` (its fixtures' external broker;
  `KAFKA_ROOT` any existing directory, which its fixture checks before it looks at KAFKA_URI).

Each run writes a JUnit report; the runner prints every test's outcome per node count, the totals,
and the tests whose outcome differs between one node and three.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from tests.cluster.nodes import Node, init_cluster
from tests.kcoord_process import REPO, KcoordServer
from tests.postgres import PgServer, start_postgres

CACHE = Path.home() / ".cache" / "kcoord" / "client-suites"
KAFKA_VERSION = "4.3.0"  # what the suites' version gates compare against: the version kcoord answers as
LEASE_TTL_MS = 5000
START_TIMEOUT_S = 120.0  # a node's start on a loaded machine (tests/cluster's 30 s was too short here)

# The container's own fixtures, replaced: the broker is the node the runner started.
AIOKAFKA_CONFTEST = """

# --- appended by kcoord's bench/client_suites.py: the broker is a kcoord node, not a container ---
_KCOORD_HOST, _KCOORD_PORT = os.environ["KCOORD_BOOTSTRAP"].rsplit(":", 1)


@pytest.fixture(scope="session")
def docker(request):
    yield None


@pytest.fixture(scope="session")
def kafka_image(request):
    return request.config.getoption("--docker-image")


@pytest.fixture(scope="session")
def ssl_folder():
    pytest.skip("kcoord run: no SSL certificates from the container")


@pytest.fixture(scope="session")
def kafka_server():
    port = int(_KCOORD_PORT)
    yield KafkaServer(_KCOORD_HOST, port, port, port, port, None)


@pytest.fixture(scope="class")
def setup_test_class(request, loop, kafka_server):
    request.cls.loop = loop
    request.cls.kafka_host = kafka_server.host
    request.cls.kafka_port = kafka_server.port
    request.cls.kafka_ssl_port = kafka_server.ssl_port
    request.cls.kafka_sasl_plain_port = kafka_server.sasl_plain_port
    request.cls.kafka_sasl_ssl_port = kafka_server.sasl_ssl_port
    request.cls.ssl_folder = None
    request.cls.acl_manager = None
    request.cls.kerberos_utils = None
    request.cls.kafka_config = None
    request.cls.hosts = kafka_server.hosts
    request.cls.kafka_version = request.config.getoption("--docker-image").split(":")[-1]
"""

KAFKA_PYTHON_SERVICE = '''"""Written by kcoord's bench/client_suites.py (the sdist lacks test/service.py):
only the external broker the fixtures use under KAFKA_URI."""


class ExternalService:
    def __init__(self, host, port):
        self.host = host
        self.port = port

    def open(self):
        pass

    def close(self):
        pass

    def stop(self):
        pass

    def dump_logs(self):
        pass

    def wait_for(self, pattern, timeout=30):
        return True


class SpawnedService:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("kcoord run: brokers are not spawned, set KAFKA_URI")
'''


@dataclass
class Suite:
    name: str
    root: Path  # the directory pytest runs in
    argv: list[str]  # pytest arguments (paths, deselection)
    flags: list[str]  # the server's, as the suite's own broker is configured (num.partitions, authorizer)
    env: dict[str, str] = field(default_factory=dict)
    deselect: str | None = None  # a -k word: tests needing what only the suite's own broker has

    def environment(self, bootstrap: str) -> dict[str, str]:
        return {**self.env, "KCOORD_BOOTSTRAP": bootstrap, "KAFKA_URI": f"PLAINTEXT://{bootstrap}"}


# -- getting the suites --------------------------------------------------------------------------------


def _download(url: str, to: Path) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=60) as answer, to.open("wb") as out:
            shutil.copyfileobj(answer, out)
        return True
    except OSError as exc:
        print(f"  cannot download {url}: {exc}", file=sys.stderr)
        to.unlink(missing_ok=True)
        return False


def _from_source(src: Path, tag: str, paths: list[str], into: Path) -> None:
    """`paths` of a git clone at `tag` (git archive), or copied from an unpacked tree."""
    into.mkdir(parents=True, exist_ok=True)
    if (src / "HEAD").exists() or (src / ".git").exists():
        archive = subprocess.run(
            ["git", "-C", str(src), "archive", "--format=tar", tag, *paths],
            capture_output=True, check=True, timeout=120,
        )  # fmt: skip
        subprocess.run(["tar", "x", "-C", str(into)], input=archive.stdout, check=True, timeout=120)
        return
    for path in paths:
        shutil.copytree(src / path, into / path, dirs_exist_ok=True)


def _unpack(tarball: Path, paths: list[str], into: Path) -> None:
    """The members under `paths` of a tarball whose first directory level is dropped."""
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            inner = member.name.split("/", 1)[1] if "/" in member.name else ""
            if any(inner == p or inner.startswith(p + "/") for p in paths):
                member.name = inner
                tar.extract(member, into, filter="data")


def aiokafka_suite(src: Path | None) -> Suite:
    version = metadata.version("aiokafka")
    root = CACHE / f"aiokafka-{version}"
    if not (root / "tests" / "conftest.py").exists():
        tag = f"v{version}"
        tarball = CACHE / f"aiokafka-{tag}-github.tar.gz"
        url = f"https://codeload.github.com/aio-libs/aiokafka/tar.gz/refs/tags/{tag}"
        if tarball.exists() or _download(url, tarball):
            _unpack(tarball, ["tests"], root)
        elif src is not None:
            _from_source(src, tag, ["tests"], root)
        else:
            raise SystemExit("aiokafka's tests: GitHub unreachable; give --aiokafka-src (a clone)")
    conftest = root / "tests" / "conftest.py"
    text = conftest.read_text()
    if "appended by kcoord" not in text:
        conftest.write_text(text + AIOKAFKA_CONFTEST)
    # test_assignors.py: unit tests needing pytest-mock, which the runner does not install;
    # asyncio_mode: its pyproject.toml's (not in the tarball's tests/)
    argv = ["tests", "--ignore", "tests/test_sasl.py", "--ignore", "tests/test_helpers.py",
            "--ignore", "tests/coordinator/test_assignors.py",
            "--docker-image", f"kcoord:{KAFKA_VERSION}", "--no-pull",
            "-o", "asyncio_mode=auto"]  # fmt: skip
    return Suite("aiokafka", root, argv, ["--num-partitions", "2"], deselect="ssl")


def kafka_python_suite(src: Path | None) -> Suite:
    version = metadata.version("kafka-python")
    root = CACHE / f"kafka_python-{version}"
    if not (root / "test" / "integration" / "conftest.py").exists():
        if src is not None:
            _from_source(src, version, ["test"], root)
        else:
            CACHE.mkdir(parents=True, exist_ok=True)
            pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                   f"kafka-python=={version}", "-d", str(CACHE)]  # fmt: skip
            subprocess.run(pip, check=True, timeout=300)
            _unpack(CACHE / f"kafka_python-{version}.tar.gz", ["test"], root)
    (root / "test" / "__init__.py").touch()
    if not (root / "test" / "service.py").exists():
        (root / "test" / "service.py").write_text(KAFKA_PYTHON_SERVICE)
    argv = ["test/integration", "--ignore", "test/integration/test_sasl_integration.py",
            "--ignore", "test/integration/test_ssl_integration.py"]  # fmt: skip
    # its broker (test/integration/fixtures.py, _acl_config): StandardAuthorizer,
    # allow.everyone.if.no.acl.found
    flags = ["--num-partitions", "4", "--authorizer", "standard", "--allow-everyone-if-no-acl-found", "true"]
    env = {"KAFKA_VERSION": KAFKA_VERSION, "KAFKA_ROOT": str(root)}
    return Suite("kafka-python", root, argv, flags, env=env)


# -- servers -------------------------------------------------------------------------------------------


@contextlib.contextmanager
def one_node(root: Path, suite: Suite) -> Iterator[str]:
    server = KcoordServer(root / "single", *suite.flags, log_path=root / "single.log")
    server.start(timeout=START_TIMEOUT_S)
    try:
        yield server.bootstrap
    finally:
        server.kill()


@contextlib.contextmanager
def three_nodes(root: Path, suite: Suite, pg: PgServer) -> Iterator[str]:
    database = f"suites_{uuid.uuid4().hex[:10]}"
    created = pg.as_postgres("createdb", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "postgres", database)
    assert created.returncode == 0, created.stderr
    dsn = pg.dsn(database)
    init_cluster(dsn)
    # broker ids from 0, as a Kafka cluster numbers them and the suites' fixtures assume (broker 0)
    started = [Node(root, node_id, dsn, LEASE_TTL_MS, *suite.flags) for node_id in (0, 1, 2)]
    try:
        for node in started:
            node.start(timeout=START_TIMEOUT_S)
        yield started[0].bootstrap
    finally:
        for node in started:
            node.kill()


# -- running and reporting -----------------------------------------------------------------------------


def outcomes(junit: Path) -> dict[str, str]:
    """test id -> passed | failed | error | skipped, from a JUnit report."""
    found: dict[str, str] = {}
    if not junit.exists():
        return found
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        found[name] = next((k for k in ("failure", "error", "skipped") if k in kinds), "passed")
        found[name] = found[name].replace("failure", "failed")
    return found


def run_suite(suite: Suite, bootstrap: str, junit: Path, args: argparse.Namespace) -> dict[str, str]:
    # -p no:kcoord: our own pytest plugin (installed with kcoord) stays out of the clients' suites
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
            "-p", "no:kcoord",
            f"--junitxml={junit}", f"--timeout={args.timeout}", "-o", "addopts=", *suite.argv]  # fmt: skip
    words = [f"({args.k})" if args.k else "", f"not {suite.deselect}" if suite.deselect else ""]
    if expression := " and ".join(w for w in words if w):
        argv += ["-k", expression]
    env = {**os.environ, **suite.environment(bootstrap)}
    env["PYTHONPATH"] = str(suite.root)  # the suite's own packages (tests/, test/) first, not ours
    log = junit.with_suffix(".log")
    with log.open("w") as out:
        subprocess.run(argv, cwd=suite.root, env=env, stdout=out, stderr=subprocess.STDOUT,
                       timeout=args.suite_timeout, check=False)  # fmt: skip
    print(f"  {suite.name} x {bootstrap}: {log}")
    return outcomes(junit)


def totals(found: dict[str, str]) -> dict[str, int]:
    counted: dict[str, int] = {}
    for outcome in found.values():
        counted[outcome] = counted.get(outcome, 0) + 1
    return counted


def report(results: dict[str, dict[int, dict[str, str]]]) -> None:
    for suite, by_nodes in results.items():
        print(f"\n== {suite}")
        for count, found in sorted(by_nodes.items()):
            print(f"  {count} node(s): {totals(found)}")
        if len(by_nodes) < 2:
            continue
        one, three = by_nodes[min(by_nodes)], by_nodes[max(by_nodes)]
        for name in sorted(set(one) | set(three)):
            if one.get(name) != three.get(name):
                print(f"  DIFF {name}: one node {one.get(name)}, three nodes {three.get(name)}")
        for name in sorted(n for n, o in three.items() if o in ("failed", "error")):
            print(f"  three nodes {three[name]}: {name}")


def _interrupted(signum: int, frame: object) -> None:
    """SIGTERM as Ctrl-C: the finally blocks stop the nodes and PostgreSQL."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suites", default="aiokafka,kafka-python")
    parser.add_argument("--nodes", default="1,3")
    parser.add_argument("--aiokafka-src", type=Path)
    parser.add_argument("--kafka-python-src", type=Path)
    parser.add_argument("--timeout", type=int, default=120, help="per test (pytest-timeout), seconds")
    parser.add_argument("--suite-timeout", type=int, default=3600, help="per suite run, seconds")
    parser.add_argument("-k", help="pytest -k expression added to every run")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupted)
    makers = {"aiokafka": lambda: aiokafka_suite(args.aiokafka_src),
              "kafka-python": lambda: kafka_python_suite(args.kafka_python_src)}  # fmt: skip
    suites = [makers[name]() for name in args.suites.split(",")]
    counts = [int(n) for n in args.nodes.split(",")]
    results: dict[str, dict[int, dict[str, str]]] = {s.name: {} for s in suites}
    root = Path(tempfile.mkdtemp(prefix="kcoord-suites-"))
    pg = start_postgres() if 3 in counts else None
    try:
        for suite in suites:
            for count in counts:
                here = root / f"{suite.name}-{count}"
                here.mkdir()
                servers = one_node(here, suite) if count == 1 else three_nodes(here, suite, pg)  # type: ignore[arg-type]
                with servers as bootstrap:
                    results[suite.name][count] = run_suite(suite, bootstrap, here / "junit.xml", args)
    finally:
        if pg is not None:
            pg.remove()
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True))
    print(f"\nlogs and reports: {root} (REPO {REPO})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
