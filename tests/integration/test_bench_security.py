"""bench/security.py end to end in its shortest form (a smoke run, not a measurement): the TLS, SCRAM
and ACL phases run against real servers and report figures; the ACL set is what the report says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.security_loads import ANONYMOUS, bench_acls
from kcoord.coordinator.metadata.acl_model import PatternType
from tests.kcoord_process import REPO


def test_the_acl_set_is_half_literal_half_prefixed_and_allows_the_loads_principal() -> None:
    acls = bench_acls(10_000, groups=100)
    patterns = [a["resource_pattern_type"] for a in acls]
    assert len(acls) == 10_000
    assert patterns.count(PatternType.LITERAL) == patterns.count(PatternType.PREFIXED) == 5_000
    assert (
        len(
            {
                (a["resource_type"], a["resource_name"], a["resource_pattern_type"], a["principal"])
                for a in acls
            }
        )
        == 10_000
    )
    mine = {(a["resource_name"], a["resource_pattern_type"]) for a in acls if a["principal"] == ANONYMOUS}
    assert mine == {("hb-", PatternType.PREFIXED), ("commit-", PatternType.PREFIXED),
                    ("bench-commits", PatternType.LITERAL)}  # fmt: skip


@pytest.mark.integration
def test_a_short_run_reports_tls_scram_and_acl_figures(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    argv = ["--seconds", "0.2", "--rounds", "1", "--groups", "2", "--window", "4", "--acls", "1000",
            "--concurrency", "4", "--phases", "tls,scram,acl", "--json", str(out)]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "bench.security", *argv], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = json.loads(out.read_text())["median"]
    tls = m["tls"]["4"]
    for row in (tls["plaintext"], tls["ssl"], tls["ceiling"], tls["ssl_ceiling"]):
        assert row["requests_per_s"] > 0 and row["errors"] == 0 and row["server_cpu_us_per_request"] > 0
    for name in ("api_versions_only", "scram_sha_256", "scram_sha_512"):
        assert m["scram"][name]["connections"] > 0 and m["scram"][name]["server_cpu_us_each"] > 0
    for load in ("heartbeats", "commits"):
        for side in ("authorizer_off", "authorizer_on"):
            assert m["acl"][load][side]["requests_per_s"] > 0 and m["acl"][load][side]["errors"] == 0
    assert "SCRAM-SHA-512 authentications" in proc.stdout and "1,000 ACLs" in proc.stdout
