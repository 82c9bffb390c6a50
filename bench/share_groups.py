"""Share groups (KIP-932, issue 34 item 6) beside the consumer-group read path, in one run.

    .venv/bin/python -m bench.share_groups [--records 200000] [--message-bytes 100] [--rounds 3]
        [--consumers 1,4,16] [--ack-samples 2000] [--storm-records 5000] [--storm-holders 10]
        [--storm-takers 4] [--layouts 1,6] [--max-poll-records 10000] [--read-timeout 120]
        [--fsync always|never] [--json out.json]

One `kcoord serve` (--fsync always unless asked: acknowledgements are durable writes), all traffic on
127.0.0.1, every client a librdkafka 2.16 process of its own (bench/share_clients.py). --records records
are produced once to a topic of 1 partition and once to a topic of 6. Then --rounds rounds, each running
every scenario once, interleaved (so that a slow stretch of a loaded machine touches every scenario
alike); the report gives each figure's median over the rounds (every round is in --json):
1. read: for each topic, a consumer-group member (confluent `Consumer`, a fresh group, from the earliest
   offset) reads everything: the in-run ceiling the share consumers are measured against; then 1, 4 and
   16 share consumers (`ShareConsumer`, implicit acknowledgement, a fresh share group with
   share.auto.offset.reset=earliest) read everything. The records are produced in batches of a Kafka
   producer's default size (16 KiB): a share partition acquires whole batches. A share read is timed
   from the moment ShareGroupDescribe shows every member assigned (the consumers wait for it after
   subscribing), the member's from its first poll (that poll's records left out of the rate); server CPU
   per record (user + system, /proc) over the same stretch. Records received again (delivery count > 1)
   are counted and reported: a healthy run has none. A second share scenario beside the default one:
   1 `ShareConsumer` with max.poll.records=--max-poll-records (librdkafka 2.16 sends max.poll.records as
   the ShareFetch's max_records and batch_size, default 500, and fetches again only when the previous
   poll's records are handed out; 10,000 records of 100 bytes are about the member's 1 MiB fetch).
2. acknowledgement latency: one `ShareConsumer` in explicit mode acknowledges --ack-samples records one at
   a time; each sample is acknowledge(ACCEPT) + commit_sync(), i.e. the ShareAcknowledge round trip,
   which kcoord answers once the acknowledgement is durable. p50 and p99.
3. lock-expiry storm: --storm-holders raw-wire share members (one connection each) acquire all
   --storm-records records of a fresh 1-partition topic with ShareFetch and go silent with their
   connections open: consumers that hang or are stopped (SIGSTOP, a partition between them and the
   client). A consumer killed outright closes its connections and its records are released at once
   (ShareSessionCache's disconnect listener), which is not this path. --storm-takers `ShareConsumer`s
   wait; when the locks (share.record.lock.duration.ms at its minimum, 15 s) run out, the server hands
   every record out again. Reported: the time from the locks' expiry to the last record redelivered,
   and the server CPU over it, per record.
Targets (issue 34): a share consumer reads at >= 0.5x the group member's records/s on the same data,
and 16 share consumers on one partition read faster than one. Nothing is asserted; run it by hand.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.share_fleet import Fleet, admin_socket, run_client, set_group_configs
from bench.share_storm import MAX_LOCKS, storm
from tests.kcoord_process import KcoordServer
from tests.server.wire import create_topic


def read_scenario(
    server: KcoordServer, topic: str, records: int, role: str, consumers: int, args: argparse.Namespace,
    client_config: dict[str, str] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """`consumers` processes of `role` in a fresh group read `topic`'s `records` records; `client_config`
    adds to each client's configuration."""
    group = f"{role}-{consumers}-{time.monotonic_ns()}"
    if role == "share":
        with admin_socket(server) as sock:
            set_group_configs(sock, group, share_auto_offset_reset="earliest")
    opts: dict[str, Any] = {"bootstrap": server.bootstrap, "topic": topic, "group": group}
    opts["client_config"] = client_config or {}
    formed = True
    with Fleet(server, role, opts, consumers, Path(args.tmp)) as fleet:
        if role == "share":  # timed once every member is assigned (the member times from its first poll)
            formed = fleet.await_members(group, consumers, timeout=args.read_timeout)
            fleet.release()
        # redeliveries count towards the end: a record whose acquisition the client lost comes back
        # with delivery count 2 (and `redelivered` says so); a healthy run has none
        seen = fleet.until(lambda first, again: first + again >= records, timeout=args.read_timeout)
    # The stretch timed starts at the first poll seen, so the records of that poll are not in the rate
    # (with few records one poll may hold them all: then there is no rate, raise --records).
    timed = seen.after_first if seen.after_first else float("nan")
    return {
        "records": seen.records,
        "redelivered": seen.redelivered,
        "records_s": timed / max(seen.seconds, 1e-9),
        "cpu_us_per_record": seen.cpu_s / timed * 1e6,
        "complete": seen.records + seen.redelivered >= records and formed,
    }


def read_round(server: KcoordServer, topics: dict[int, str], args: argparse.Namespace) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for partitions, topic in topics.items():
        row[f"member_p{partitions}"] = read_scenario(server, topic, args.records, "member", 1, args)
        for consumers in args.consumers:
            key = f"share{consumers}_p{partitions}"
            row[key] = read_scenario(server, topic, args.records, "share", consumers, args)
        if args.max_poll_records:  # a second scenario beside the default one, never instead of it
            config = {"max.poll.records": str(args.max_poll_records)}
            key = f"share1_mpr_p{partitions}"
            row[key] = read_scenario(server, topic, args.records, "share", 1, args, config)
    return row


def ack_round(server: KcoordServer, topic: str, args: argparse.Namespace) -> dict[str, Any]:
    group = f"ack-{time.monotonic_ns()}"
    with admin_socket(server) as sock:
        set_group_configs(sock, group, share_auto_offset_reset="earliest")
    opts = {"bootstrap": server.bootstrap, "topic": topic, "group": group, "samples": args.ack_samples}
    latencies = run_client("ack_latency", opts, timeout=600)["latencies_ms"]
    return {"samples": len(latencies), "p50_ms": percentile(latencies, 0.5),
            "p99_ms": percentile(latencies, 0.99)}  # fmt: skip


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def prepare_topic(server: KcoordServer, name: str, partitions: int, records: int, size: int) -> str:
    with admin_socket(server) as sock:
        assert create_topic(sock, name, partitions)["error_code"] == 0, name
    opts = {"bootstrap": server.bootstrap, "topic": name, "partitions": partitions,
            "records": records, "message_bytes": size}  # fmt: skip
    acked = run_client("produce", opts, timeout=600)["acked"]
    if acked != records:
        raise RuntimeError(f"{name}: {acked} of {records} records acknowledged")
    return name


def medians(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Per scenario, the median over the rounds of each numeric figure."""
    out: dict[str, Any] = {}
    for key in rounds[0]:
        figures = rounds[0][key]
        out[key] = {
            name: statistics.median(r[key][name] for r in rounds)
            for name, value in figures.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool)
        }
        out[key]["complete"] = all(r[key].get("complete", True) for r in rounds)
    return out


def bench(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"commit": git_commit(), "args": {k: str(v) for k, v in vars(args).items()}}
    with tempfile.TemporaryDirectory(prefix="kcoord-share-bench-", dir=args.dir) as tmp:
        args.tmp = tmp
        # the storm holds up to MAX_LOCKS records of one partition at once: the broker's bound must allow
        # the group config it sets (the default bound, 4,000, is below the default --storm-records window)
        server = KcoordServer(Path(tmp) / "data", "--fsync", args.fsync, "--log-level", "INFO",
                              "--group-share-max-partition-max-record-locks", str(MAX_LOCKS))  # fmt: skip
        server.start(60)
        try:
            topics = {p: prepare_topic(server, f"read-{p}", p, args.records, args.message_bytes)
                      for p in args.layouts}  # fmt: skip
            ack_topic = prepare_topic(server, "ack", 1, args.ack_samples, args.message_bytes)
            rounds = []
            for index in range(args.rounds):
                row = read_round(server, topics, args)
                row["ack_latency"] = ack_round(server, ack_topic, args)
                row["storm"] = storm(server, f"storm-{index}", args)
                rounds.append(row)
            results["rounds"] = rounds
            results["median"] = medians(rounds)
        finally:
            server.stop()
    return results


def report(results: dict[str, Any], args: argparse.Namespace) -> None:
    m = results["median"]
    print(f"commit {results['commit']}: median of {args.rounds} interleaved round(s), {args.records:,} "
          f"records of {args.message_bytes} bytes, --fsync {args.fsync}")  # fmt: skip
    for p in args.layouts:
        base = m[f"member_p{p}"]
        print(f"{p} partition(s): group member {base['records_s']:,.0f} records/s, "
              f"{base['cpu_us_per_record']:.1f} us server CPU/record{_incomplete(base)}")  # fmt: skip
        for consumers in args.consumers:
            row = m[f"share{consumers}_p{p}"]
            notes = _redelivered(row) + _incomplete(row)
            print(f"  {consumers:2} share consumer(s): {row['records_s']:,.0f} records/s "
                  f"({row['records_s'] / base['records_s']:.2f}x the member), "
                  f"{row['cpu_us_per_record']:.1f} us server CPU/record{notes}")  # fmt: skip
        if args.max_poll_records:
            row = m[f"share1_mpr_p{p}"]
            notes = _redelivered(row) + _incomplete(row)
            print(f"   1 share consumer, max.poll.records={args.max_poll_records}: "
                  f"{row['records_s']:,.0f} records/s "
                  f"({row['records_s'] / base['records_s']:.2f}x the member), "
                  f"{row['cpu_us_per_record']:.1f} us server CPU/record{notes}")  # fmt: skip
    ack, st = m["ack_latency"], m["storm"]
    print(f"explicit acknowledgement (acknowledge + commit_sync): p50 {ack['p50_ms']:.2f} ms, "
          f"p99 {ack['p99_ms']:.2f} ms ({ack['samples']:.0f} samples)")  # fmt: skip
    print(f"lock-expiry storm: {st['expired']:.0f} records, all handed out again {st['seconds']:.2f} s "
          f"after the locks ran out (first after {st['first_s']:.2f} s), "
          f"{st['cpu_us_per_record']:.1f} us server CPU/record{_incomplete(st)}")  # fmt: skip
    _targets(m, args)


def _targets(m: dict[str, Any], args: argparse.Namespace) -> None:
    if 1 not in args.layouts:
        return
    if 1 in args.consumers:
        ratio = m["share1_p1"]["records_s"] / m["member_p1"]["records_s"]
        verdict = "met" if ratio >= 0.5 else "NOT met"
        print(f"target: a share consumer >= 0.5x the group member on 1 partition: {ratio:.2f}x, {verdict}")
    if 1 in args.consumers and 16 in args.consumers:
        scale = m["share16_p1"]["records_s"] / m["share1_p1"]["records_s"]
        verdict = "met" if scale > 1 else "NOT met"
        print(f"target: 16 share consumers past one on 1 partition: {scale:.2f}x, {verdict}")


def _redelivered(row: dict[str, Any]) -> str:
    return f", {row['redelivered']:.0f} redelivered" if row.get("redelivered") else ""


def _incomplete(row: dict[str, Any]) -> str:
    return "" if row.get("complete", True) else " INCOMPLETE"


def git_commit() -> str:
    import subprocess

    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip()


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",")]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.share_groups", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--message-bytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the median is reported")
    parser.add_argument("--consumers", type=_ints, default=[1, 4, 16], help="share consumers per read")
    parser.add_argument("--layouts", type=_ints, default=[1, 6], help="partitions of the topics read")
    parser.add_argument(
        "--max-poll-records", type=int, default=10_000,
        help="a second scenario: 1 share consumer with this max.poll.records (librdkafka sends it as the "
        "ShareFetch's max_records and batch_size; 10,000 records of 100 bytes are about the member's "
        "1 MiB fetch); 0 leaves it out",
    )  # fmt: skip
    parser.add_argument("--ack-samples", type=int, default=2000)
    parser.add_argument("--storm-records", type=int, default=5000)
    parser.add_argument("--storm-holders", type=int, default=10)
    parser.add_argument("--storm-takers", type=int, default=4)
    parser.add_argument("--read-timeout", type=float, default=120.0, help="bound of each read, seconds")
    parser.add_argument("--fsync", choices=("always", "never"), default="always")
    parser.add_argument("--dir", default=None, help="where the data directory goes (default: the temp dir)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    results = bench(args)
    report(results, args)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
