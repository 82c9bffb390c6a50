"""Security benchmark (issue 25): what TLS, SCRAM and the authorizer cost, each against the same load
without it, measured in the same run.

    .venv/bin/python -m bench.security [--seconds 5] [--rounds 3] [--window 16,64] [--groups 100]
        [--acls 10000] [--concurrency 16] [--phases tls,produce,scram,acl] [--json out.json]

Three servers, all `--fsync never` (the disk is not what is measured), on 127.0.0.1:
- a secured server (tests/security/conftest.py's SecuredServer: PLAINTEXT, SSL, SASL_PLAINTEXT and
  SASL_SSL listeners, user alice with SCRAM credentials; certificates made per run by
  tests/security/certs.py, EC P-256);
- `kcoord serve` without an authorizer, and the same with `--authorizer standard
  --allow-everyone-if-no-acl-found true` and `--acls` ACLs (half LITERAL, half PREFIXED, on topics
  and groups, made with CreateAcls; the load's principal User:ANONYMOUS is allowed by some of them).
Every round runs the phases below; each pair's order flips from one round to the next (interleaved),
and the report gives the median of the rounds (every round is in --json):
1. tls: heartbeats/s of `--groups` x 10 members (bench.coordinator's raw-socket load: 16 connections
   x `--window` in flight, pre-encoded frames) on the PLAINTEXT listener, then the same connections'
   count wrapped in TLS on the SSL listener (Python's ssl, server-authenticated), and bench.coordinator's
   bare uvloop server answering pre-encoded heartbeats, plain and with TLS, the answers to one read in
   one write as kcoord sends them (the ceilings of this machine and client: what TLS costs a server
   that does nothing else);
2. produce: librdkafka producer MiB/s (bench.dataplane's produce role: acks=all, 1 KiB records)
   through PLAINTEXT and through SSL;
3. scram: short connections, `--concurrency` at a time, each connect + ApiVersions v3 + SaslHandshake
   v1 + SaslAuthenticate v2 (SCRAM-SHA-256, then SCRAM-SHA-512; 4096 iterations, the client's PBKDF2
   cached) + close on SASL_PLAINTEXT; the limit: connect + ApiVersions + close on PLAINTEXT;
4. acl: the heartbeat load and an OffsetCommit load (bench.instructions' frames: one partition, 100
   groups, generation -1) against the server without an authorizer and the one with the ACLs.
Server CPU (/proc/PID/stat) per request, per MiB or per connection is given beside every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import ssl
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from bench import security_loads as loads
from bench.coordinator import (
    commit_errors,
    git_commit,
    heartbeat_error,
    raise_open_files_limit,
    start_ceiling,
)
from bench.instructions import commit_frames
from bench.transactions import medians
from tests.kcoord_process import KcoordServer, ServerProcess
from tests.security.certs import Pki, make_pki
from tests.security.conftest import PASSWORD, USER, SecuredServer, Tokens

CONNECTIONS, PER_GROUP = 16, 10
Phase = Callable[[], Awaitable[dict[str, Any]]]


class Bench:
    """The servers and loads of one run."""

    def __init__(self, args: argparse.Namespace, root: Path) -> None:
        self.args = args
        self.pki: Pki = make_pki(root / "pki")
        self.secured = SecuredServer(root / "secured", self.pki, Tokens(root))
        self.plain = KcoordServer(root / "plain", "--fsync", "never", "--log-level", "INFO")
        self.authorized = KcoordServer(
            root / "acl", "--fsync", "never", "--log-level", "INFO",
            "--authorizer", "standard", "--allow-everyone-if-no-acl-found", "true",
        )  # fmt: skip
        self.servers: list[ServerProcess] = []
        self.tls = ssl.create_default_context(cafile=str(self.pki.ca))
        self.frames: dict[str, Any] = {}
        self.conns: list[Any] = []
        self.keep_alives: list[asyncio.Future[None]] = []

    async def start(self) -> None:
        args = self.args
        servers: list[ServerProcess] = [self.secured, self.plain, self.authorized]
        self.servers += servers  # stopped at the end even if one fails to start
        ceilings = asyncio.gather(
            asyncio.to_thread(start_ceiling, None, True),
            asyncio.to_thread(start_ceiling, self.pki.server, True),
        )
        started = asyncio.gather(*(asyncio.to_thread(server.start, 60) for server in servers))
        (self.ceiling, self.tls_ceiling), _ = await asyncio.gather(ceilings, started)
        self.servers += [self.ceiling, self.tls_ceiling]
        if "acl" in args.phases:
            await loads.create_acls(self.authorized.port, loads.bench_acls(args.acls, args.groups))
            await loads.assert_denied(self.authorized.port, "app-0")
        # TLS: groups formed on the secured server; the ACL phase: on both of the others
        targets: dict[str, ServerProcess] = {"secured": self.secured} if "tls" in args.phases else {}
        if "acl" in args.phases:
            targets.update(plain=self.plain, authorized=self.authorized)
        server: ServerProcess
        for name, server in targets.items():
            frames, conns = await loads.heartbeat_groups(server.port, args.groups, PER_GROUP, CONNECTIONS)
            self.frames[name] = frames
            self.conns += conns
            self.keep_alives.append(asyncio.ensure_future(loads.keep_alive(server.port, frames)))
            if name != "secured":
                self.frames[f"{name}-commits"] = await commit_frames(server.port)

    def check_alive(self) -> None:
        """Raise a keep-alive's failure (a member lost between loads would skew the next one)."""
        for task in self.keep_alives:
            if task.done():
                task.result()

    def stop(self) -> None:
        for task in self.keep_alives:
            task.cancel()
        for conn in self.conns:
            conn.close()
        for server in self.servers:
            server.stop()

    async def tls_phase(self, flip: bool) -> dict[str, Any]:
        s, a, frames = self.secured, self.args, self.frames["secured"]
        out: dict[str, Any] = {}
        for window in a.windows:
            plain, tls = await in_order(
                flip,
                functools.partial(loads.heartbeats, s, frames, window, a.seconds, s.ports["PLAINTEXT"], None),
                functools.partial(loads.heartbeats, s, frames, window, a.seconds, s.ports["SSL"], self.tls),
            )
            ceiling, tls_ceiling = await in_order(
                flip,
                functools.partial(loads.heartbeats, self.ceiling, frames, window, a.seconds, None, None),
                functools.partial(
                    loads.heartbeats, self.tls_ceiling, frames, window, a.seconds, None, self.tls
                ),
            )
            out[str(window)] = {
                "plaintext": plain,
                "ssl": tls,
                "ceiling": ceiling,
                "ssl_ceiling": tls_ceiling,
                "ssl_over_plaintext": tls["requests_per_s"] / max(plain["requests_per_s"], 1e-9),
            }
        return out

    async def produce_phase(self, flip: bool) -> dict[str, Any]:
        s, a = self.secured, self.args
        ssl_config = {"security.protocol": "SSL", "ssl.ca.location": str(self.pki.ca)}

        def load(listener: str, config: dict[str, str]) -> Phase:
            return lambda: asyncio.to_thread(loads.produce, s, s.bootstrap_for(listener),
                                             s.bootstrap_for("PLAINTEXT"), config, a)  # fmt: skip

        plain, tls = await in_order(flip, load("PLAINTEXT", {}), load("SSL", ssl_config))
        return {
            "plaintext": plain,
            "ssl": tls,
            "ssl_over_plaintext": tls["mib_s"] / max(plain["mib_s"], 1e-9),
        }

    async def scram_phase(self, flip: bool) -> dict[str, Any]:
        s, a, user = self.secured, self.args, (USER, PASSWORD)
        sasl, plain = s.ports["SASL_PLAINTEXT"], s.ports["PLAINTEXT"]
        limit = await loads.short_connections(s, plain, None, user, a)
        sha256, sha512 = await in_order(
            flip,
            lambda: loads.short_connections(s, sasl, "SCRAM-SHA-256", user, a),
            lambda: loads.short_connections(s, sasl, "SCRAM-SHA-512", user, a),
        )
        return {"api_versions_only": limit, "scram_sha_256": sha256, "scram_sha_512": sha512}

    async def acl_phase(self, flip: bool) -> dict[str, Any]:
        a = self.args
        out: dict[str, Any] = {}
        window = max(a.windows)
        for load, error_of in (("heartbeats", heartbeat_error), ("commits", commit_errors)):
            key = {"heartbeats": "", "commits": "-commits"}[load]

            def run(
                server: KcoordServer, name: str, e: Callable[[bytes], int] = error_of, k: str = key
            ) -> Phase:
                return lambda: loads.pipelined(server, self.frames[name + k], window, a.seconds, e)

            off, on = await in_order(flip, run(self.plain, "plain"), run(self.authorized, "authorized"))
            cost = on["server_cpu_us_per_request"] - off["server_cpu_us_per_request"]
            out[load] = {"authorizer_off": off, "authorizer_on": on, "cpu_us_added_per_request": cost}
        return out


async def in_order(flip: bool, first: Phase, second: Phase) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both, the second first when `flip` (rounds alternate, so drift favours neither)."""
    if flip:
        b = await second()
        return await first(), b
    a = await first()
    return a, await second()


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"commit": git_commit(), "argv": sys.argv[1:], "rounds": []}
    with tempfile.TemporaryDirectory(prefix="kcoord-bench-sec-") as tmp:
        run = Bench(args, Path(tmp))
        try:
            await run.start()
            for index in range(args.rounds):
                flip, one = index % 2 == 1, {}
                for name in ("tls", "produce", "scram", "acl"):
                    if name in args.phases:
                        one[name] = await getattr(run, f"{name}_phase")(flip)
                        run.check_alive()
                results["rounds"].append(one)
                print(f"round {index + 1}/{args.rounds} done", file=sys.stderr, flush=True)
        finally:
            run.stop()
    results["median"] = medians(results["rounds"])
    return results


def _load(row: dict[str, Any]) -> str:
    errors = f", errors {row['error_codes']}" if row["errors"] else ""
    return (f"{row['requests_per_s']:,.0f}/s p99 {row['p99_ms']:.2f} ms, server "
            f"{row['server_cpu_us_per_request']:.1f} us CPU each{errors}")  # fmt: skip


def report(results: dict[str, Any], args: argparse.Namespace) -> None:
    m = results["median"]
    print(f"commit {results['commit']}: median of {args.rounds} interleaved round(s) of {args.seconds:g} s "
          f"loads, servers --fsync never, {args.groups} groups x {PER_GROUP} members")  # fmt: skip
    print(f"    python -m bench.security {' '.join(results['argv'])}")
    for window, row in m.get("tls", {}).items():
        print(
            f"heartbeats, {CONNECTIONS} connections x {window} in flight: PLAINTEXT {_load(row['plaintext'])}"
        )
        print(f"    SSL {_load(row['ssl'])}: {row['ssl_over_plaintext']:.2f}x plaintext")
        print("    ceilings (bare uvloop, pre-encoded answers, one write per read):")
        print(f"        plaintext {_load(row['ceiling'])}")
        print(f"        TLS {_load(row['ssl_ceiling'])}")
    if "produce" in m:
        p = m["produce"]
        cpu = {k: f"server {p[k]['server_cpu_ms_per_mib']:.1f} ms CPU/MiB" for k in ("plaintext", "ssl")}
        print(
            f"produce (librdkafka, acks=all, {args.message_bytes}-byte records, {args.partitions} "
            f"partitions): PLAINTEXT {p['plaintext']['mib_s']:.1f} MiB/s ({cpu['plaintext']}), "
            f"SSL {p['ssl']['mib_s']:.1f} MiB/s ({cpu['ssl']}): {p['ssl_over_plaintext']:.2f}x"
        )
    if "scram" in m:
        for name, row in m["scram"].items():
            what = "connect + ApiVersions + close (the limit)" if name == "api_versions_only" else (
                f"{name.upper().replace('_', '-')} authentications")  # fmt: skip
            print(f"{what}, {args.concurrency} at a time: {row['per_s']:,.0f}/s, "
                  f"server {row['server_cpu_us_each']:.0f} us CPU each")  # fmt: skip
    for load, row in m.get("acl", {}).items():
        print(
            f"{load} ({CONNECTIONS} x {max(args.windows)} in flight): "
            f"authorizer off {_load(row['authorizer_off'])}"
        )
        print(
            f"    --authorizer standard, {args.acls:,} ACLs {_load(row['authorizer_on'])}: "
            f"{row['cpu_us_added_per_request']:+.2f} us CPU per request"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.security", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each timed load (default 5)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the median is reported")
    parser.add_argument(
        "--window", default="16,64", help="heartbeats in flight per connection (default 16,64)"
    )
    parser.add_argument("--groups", type=int, default=100, help="heartbeating groups of 10 (default 100)")
    parser.add_argument(
        "--acls", type=int, default=10_000, help="ACLs on the authorizing server (default 10000)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=16, help="short connections at a time (default 16)"
    )
    parser.add_argument("--partitions", type=int, default=6, help="produce phase's partitions (default 6)")
    parser.add_argument("--message-bytes", type=int, default=1024)
    parser.add_argument("--phases", default="tls,produce,scram,acl")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    args.windows = [int(w) for w in args.window.split(",") if w]
    args.phases = set(args.phases.split(","))
    raise_open_files_limit()
    import uvloop

    results = uvloop.run(bench(args))
    report(results, args)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
