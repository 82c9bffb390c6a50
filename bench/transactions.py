"""Transactions benchmark (issue 24): librdkafka (confluent-kafka) clients in their own processes against
`kcoord serve --fsync always`.

    .venv/bin/python -m bench.transactions [--seconds 5] [--rounds 3] [--partitions 6]
        [--message-bytes 1024] [--txn-ms 100] [--queue-kib 8192] [--ctp-batch 1000] [--json out.json]

Every round runs these phases, each bounded in time, on one server, all traffic on 127.0.0.1; the
order of each pair flips from one round to the next (interleaved), and the report gives the median of
the rounds (every round is in --json):
1. produce MiB/s, acks=all, one producer process for `--seconds` over `--partitions` partitions:
   idempotent (the ceiling: the same client settings and loop, no transactions) and transactional
   (transactions one after another, each: begin, produce for `--txn-ms`, flush, commit_transaction).
   Compared within the round; the target is transactional >= 0.8 x idempotent.
2. commit latency p50/p99 of that transactional producer: commit_transaction() timed on the client
   after its records were flushed, so it is EndTxn's round trip, answered once the PrepareCommit
   record is durable (fsynced), plus librdkafka's own scheduling; the markers are written after.
   Beside it, EndTxn's round trip from a raw protocol client (AddPartitionsToTxn for every partition,
   no records, EndTxn commit; our own codec, no client library): the server's time for the request.
3. consume MiB/s of everything the transactional producer wrote, from a cold start of the log, with
   read_uncommitted (the ceiling) and read_committed (up to the last stable offset, aborted
   transactions filtered), each a fresh consumer process (bench.dataplane's consume role).
4. a consume-transform-produce loop's records/s (tests/integration/workers/txn_processor.py:
   read_committed consumer in a classic group, transactional producer, send_offsets_to_transaction,
   `--ctp-batch` records per transaction) over the transactional topic of phase 1 as its pre-produced
   input, timed from its first committed transaction to its last within `--seconds`; then it is
   killed and its transactional id fenced (its open transaction aborted at once, not at its timeout).
Server CPU (/proc/PID/stat) per MiB, per transaction or per record is given beside every figure, and
the fsync latency of the data directory's file system is measured in the same run. Figures vary
between machines; compare them only with the ceilings of the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.coordinator import git_commit
from bench.dataplane import MIB, create_topic, fsync_latency_ms, percentile, run_role
from bench.end_txn_wire import raw_end_txn_ms
from tests.integration.transactions import Processor
from tests.kcoord_process import KcoordServer

# -- the client side, run as `python -m bench.transactions produce <json>` in its own process ---------------


def _producer(opts: dict[str, Any], failures: list[str]) -> Any:
    from confluent_kafka import Producer

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    transactional = {"transactional.id": f"bench-{os.getpid()}", "transaction.timeout.ms": 60_000}
    return Producer(
        {
            "bootstrap.servers": opts["bootstrap"],
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            # small enough that a transaction's flush before its commit is short (a 100 ms transaction
            # stays near 100 ms), large enough to keep requests in flight; the same in both modes
            "queue.buffering.max.kbytes": opts["queue_kib"],
            "compression.type": "none",
            "on_delivery": delivered,
            **(transactional if opts["transactional"] else {}),
        }
    )


def _produce_until(producer: Any, until: float, opts: dict[str, Any], payload: bytes, sent: int) -> int:
    """Produce as fast as the client takes records until `until`; returns the running count sent."""
    topic, partitions = opts["topic"], opts["partitions"]
    while time.monotonic() < until:
        try:
            producer.produce(topic, value=payload, partition=sent % partitions)
            sent += 1
        except BufferError:
            producer.poll(0.005)
        if sent % 1000 == 0:
            producer.poll(0)
    return sent


def produce_role(opts: dict[str, Any]) -> dict[str, Any]:
    """Idempotent or transactional produce for `seconds`; every record acknowledged (and committed)."""
    failures: list[str] = []
    producer = _producer(opts, failures)
    transactional, txn_s = opts["transactional"], opts["txn_ms"] / 1000
    payload, sent, commits_ms, txns_ms = os.urandom(opts["message_bytes"]), 0, [], []
    # The clock starts once the producer has its producer id: init_transactions() gets it; an
    # idempotent producer gets it on its own after connecting (librdkafka took ~0.5 s here), so one
    # record is delivered first, outside the timed part.
    if transactional:
        producer.init_transactions(60)
    else:
        producer.produce(opts["topic"], value=payload, partition=0)
        producer.flush(60)
        sent = 1
    warm = sent
    started = time.monotonic()
    deadline = started + opts["seconds"]
    while time.monotonic() < deadline:
        if not transactional:
            sent = _produce_until(producer, deadline, opts, payload, sent)
            break
        begun = time.perf_counter()
        producer.begin_transaction()
        sent = _produce_until(producer, min(time.monotonic() + txn_s, deadline), opts, payload, sent)
        producer.flush(60)  # the records first, so that the timed commit is EndTxn's round trip
        commit_started = time.perf_counter()
        producer.commit_transaction(60)  # raises if the transaction did not commit
        commits_ms.append((time.perf_counter() - commit_started) * 1000)
        txns_ms.append((time.perf_counter() - begun) * 1000)
    if producer.flush(60) != 0 or failures:
        raise RuntimeError(f"undelivered after 60 s or failed: {failures[:3]}")
    return {
        "messages": sent,  # in the topic
        "bytes": (sent - warm) * len(payload),  # in the timed part
        "seconds": time.monotonic() - started,
        "commits_ms": commits_ms,
        "txns_ms": txns_ms,
    }


def fence_role(opts: dict[str, Any]) -> dict[str, Any]:
    """InitProducerId with a killed producer's transactional id: its open transaction is aborted now
    rather than at its timeout, so that it does not weigh on the next phases."""
    from confluent_kafka import Producer

    Producer(
        {"bootstrap.servers": opts["bootstrap"], "transactional.id": opts["transactional_id"]}
    ).init_transactions(60)
    return {}


ROLES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {"produce": produce_role, "fence": fence_role}


# -- phases ---------------------------------------------------------------------------------------------


def produce_phase(server: KcoordServer, args: argparse.Namespace, transactional: bool) -> dict[str, Any]:
    kind = "txn" if transactional else "idem"
    topic = f"bench-{kind}-{time.monotonic_ns()}"
    create_topic(server.bootstrap, topic, args.partitions)
    opts = {
        "bootstrap": server.bootstrap,
        "topic": topic,
        "partitions": args.partitions,
        "message_bytes": args.message_bytes,
        "seconds": args.seconds,
        "transactional": transactional,
        "txn_ms": args.txn_ms,
        "queue_kib": args.queue_kib,
    }
    cpu0 = server.cpu_seconds()
    produced = run_role("produce", opts, module="bench.transactions")
    cpu = server.cpu_seconds() - cpu0
    mib = produced["bytes"] / MIB
    row = {
        "topic": topic,
        "partitions": args.partitions,
        "messages": produced["messages"],
        "mib_s": mib / produced["seconds"],
        "server_cpu_ms_per_mib": cpu * 1000 / max(mib, 1e-9),
    }
    if transactional:
        commits = produced["commits_ms"]
        row.update(
            transactions=len(commits),
            commit_p50_ms=percentile(commits, 0.5),
            commit_p99_ms=percentile(commits, 0.99),
            txn_p50_ms=percentile(produced["txns_ms"], 0.5),  # begin to committed: the real length
            server_cpu_ms_per_txn=cpu * 1000 / max(len(commits), 1),
        )
    return row


def raw_end_txn_phase(server: KcoordServer, args: argparse.Namespace) -> dict[str, Any]:
    topic = f"bench-raw-{time.monotonic_ns()}"
    create_topic(server.bootstrap, topic, args.partitions)
    cpu0 = server.cpu_seconds()
    timings = asyncio.run(raw_end_txn_ms(server.port, topic, args.partitions, min(args.seconds, 3.0)))
    cpu = server.cpu_seconds() - cpu0
    return {
        "transactions": len(timings),
        "end_txn_p50_ms": percentile(timings, 0.5),
        "end_txn_p99_ms": percentile(timings, 0.99),
        "server_cpu_ms_per_txn": cpu * 1000 / max(len(timings), 1),
    }


def consume_phase(server: KcoordServer, produced: dict[str, Any], isolation: str) -> dict[str, Any]:
    opts = {
        "bootstrap": server.bootstrap,
        "topic": produced["topic"],
        "partitions": produced["partitions"],
        "seconds": 120,
        "expected": produced["messages"],
        "isolation_level": isolation,
    }
    cpu0 = server.cpu_seconds()
    consumed = run_role("consume", opts)
    cpu = server.cpu_seconds() - cpu0
    mib = consumed["bytes"] / MIB
    return {
        "mib_s": mib / consumed["seconds"],
        "server_cpu_ms_per_mib": cpu * 1000 / max(mib, 1e-9),
        "complete": consumed["messages"] >= produced["messages"],
    }


def _commits(processor: Processor) -> list[dict[str, Any]]:
    return [e for e in list(processor.events) if e["event"] == "txn_committed"]


def _watch(processor: Processor, total: int, seconds: float) -> None:
    """From its first commit: until `seconds` later and a second commit seen, or all `total` input
    records committed (at most 60 s more for the second commit)."""
    window_end, cap = time.monotonic() + seconds, time.monotonic() + seconds + 60
    while processor.committed_records() < total:
        now = time.monotonic()
        if now >= window_end and len(_commits(processor)) >= 2:
            return
        if now >= cap or not processor.alive():
            raise RuntimeError(
                f"{processor}: {len(_commits(processor))} commits, last {processor.events[-3:]}"
            )
        time.sleep(0.05)  # the processor runs on its own; this only samples its progress


def ctp_phase(
    server: KcoordServer, args: argparse.Namespace, produced: dict[str, Any], logs: Path
) -> dict[str, Any]:
    """The processor over `produced`'s topic: records/s between its first and its last commit."""
    output = f"{produced['topic']}-out"
    create_topic(server.bootstrap, output, args.partitions)
    options = {
        "bootstrap": server.bootstrap,
        "group": f"bench-ctp-{time.monotonic_ns()}",
        "input": produced["topic"],
        "output": output,
        "transactional_id": f"bench-ctp-{time.monotonic_ns()}",
        "batch": args.ctp_batch,
    }
    processor = Processor(options, logs / f"processor-{options['group']}.log")
    try:
        processor.wait_event(lambda e: e["event"] == "txn_committed", 60, "the first committed transaction")
        cpu0 = server.cpu_seconds()
        _watch(processor, produced["messages"], args.seconds)
        cpu = server.cpu_seconds() - cpu0
        commits = _commits(processor)
    finally:
        processor.cleanup()
    fence = {"bootstrap": server.bootstrap, "transactional_id": options["transactional_id"], "seconds": 0}
    run_role("fence", fence, module="bench.transactions")
    records = sum(e["records"] for e in commits[1:])
    return {
        "transactions": len(commits),
        "records_s": records / max(commits[-1]["t"] - commits[0]["t"], 1e-9),
        "server_cpu_us_per_record": cpu * 1e6 / max(records, 1),  # from the first commit on, as records
        "all_input": sum(e["records"] for e in commits) >= produced["messages"],
    }


# -- rounds ---------------------------------------------------------------------------------------------


def in_order(
    flip: bool, first: Callable[[], dict[str, Any]], second: Callable[[], dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run both; the second first when `flip` (rounds alternate, so drift does not favour either)."""
    if flip:
        b = second()
        return first(), b
    a = first()
    return a, second()


def one_round(server: KcoordServer, args: argparse.Namespace, index: int, logs: Path) -> dict[str, Any]:
    flip = index % 2 == 1
    idem, txn = in_order(
        flip, lambda: produce_phase(server, args, False), lambda: produce_phase(server, args, True)
    )
    raw = raw_end_txn_phase(server, args)
    uncommitted, committed = in_order(
        flip,
        lambda: consume_phase(server, txn, "read_uncommitted"),
        lambda: consume_phase(server, txn, "read_committed"),
    )
    return {
        "idempotent": idem,
        "transactional": txn,
        "txn_over_idempotent": txn["mib_s"] / max(idem["mib_s"], 1e-9),
        "raw_end_txn": raw,
        "read_uncommitted": uncommitted,
        "read_committed": committed,
        "committed_over_uncommitted": committed["mib_s"] / max(uncommitted["mib_s"], 1e-9),
        "ctp": ctp_phase(server, args, txn, logs),
    }


def medians(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of every number over the rounds, nested as one round is; a flag holds if it held in
    every round; text is the first round's."""
    first = rounds[0]
    out: dict[str, Any] = {}
    for key, value in first.items():
        if isinstance(value, dict):
            out[key] = medians([r[key] for r in rounds])
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = statistics.median(r[key] for r in rounds)
        elif isinstance(value, bool):
            out[key] = all(r[key] for r in rounds)
        else:
            out[key] = value
    return out


def bench(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"commit": git_commit(), "argv": sys.argv[1:], "rounds": []}
    with tempfile.TemporaryDirectory(prefix="kcoord-bench-txn-", dir=args.dir) as tmp:
        data = Path(tmp)
        results["limits"] = {"fsync_ms": fsync_latency_ms(data)}
        # INFO: the fixture waits for the "listening on" line
        server = KcoordServer(data / "data", "--fsync", "always", "--log-level", "INFO")
        server.start(60)
        try:
            for index in range(args.rounds):
                results["rounds"].append(one_round(server, args, index, data))
                print(f"round {index + 1}/{args.rounds} done", file=sys.stderr, flush=True)
        finally:
            server.stop()
    results["median"] = medians(results["rounds"])
    return results


def _cpu(row: dict[str, Any], key: str = "server_cpu_ms_per_mib", unit: str = "ms CPU/MiB") -> str:
    return f"server {row[key]:.2f} {unit}"


def report(results: dict[str, Any], args: argparse.Namespace) -> None:
    m = results["median"]
    idem, txn, raw, ctp = m["idempotent"], m["transactional"], m["raw_end_txn"], m["ctp"]
    ru, rc = m["read_uncommitted"], m["read_committed"]
    complete = "" if ru["complete"] and rc["complete"] else " INCOMPLETE"
    print(
        f"commit {results['commit']}: median of {args.rounds} interleaved round(s) of {args.seconds:g} s "
        f"phases, {args.message_bytes}-byte records, {args.partitions} partition(s), --fsync always"
    )
    print(f"    python -m bench.transactions {' '.join(results['argv'])}")
    print(f"limits: fsync {results['limits']['fsync_ms']:.2f} ms")
    print(
        f"produce: idempotent {idem['mib_s']:.1f} MiB/s ({_cpu(idem)}), transactional ({args.txn_ms} ms) "
        f"{txn['mib_s']:.1f} MiB/s ({_cpu(txn)}): {m['txn_over_idempotent']:.2f}x (target >= 0.8x)"
    )
    print(
        f"commit_transaction() after flush (EndTxn until PrepareCommit is durable): "
        f"p50 {txn['commit_p50_ms']:.1f} ms, p99 {txn['commit_p99_ms']:.1f} ms "
        f"({txn['transactions']:.0f} transactions of {txn['txn_p50_ms']:.0f} ms (p50) from begin to "
        f"committed, {_cpu(txn, 'server_cpu_ms_per_txn', 'ms CPU/txn')})"
    )
    print(
        f"EndTxn from a raw client (no records): p50 {raw['end_txn_p50_ms']:.2f} ms, "
        f"p99 {raw['end_txn_p99_ms']:.2f} ms "
        f"({raw['transactions']:.0f} transactions, {_cpu(raw, 'server_cpu_ms_per_txn', 'ms CPU/txn')})"
    )
    print(
        f"consume: read_uncommitted {ru['mib_s']:.1f} MiB/s ({_cpu(ru)}), "
        f"read_committed {rc['mib_s']:.1f} MiB/s ({_cpu(rc)}): "
        f"{m['committed_over_uncommitted']:.2f}x{complete}"
    )
    print(
        f"consume-transform-produce ({args.ctp_batch} records/txn): {ctp['records_s']:,.0f} records/s "
        f"({ctp['transactions']:.0f} transactions, {_cpu(ctp, 'server_cpu_us_per_record', 'us CPU/record')})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ROLES:
        print(json.dumps(ROLES[argv[0]](json.loads(argv[1]))))
        return 0
    parser = argparse.ArgumentParser(prog="bench.transactions", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each timed phase")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the median is reported")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--message-bytes", type=int, default=1024)
    parser.add_argument("--txn-ms", type=int, default=100, help="how long each transaction produces")
    parser.add_argument("--queue-kib", type=int, default=8192, help="producers' queue.buffering.max.kbytes")
    parser.add_argument(
        "--ctp-batch", type=int, default=1000, help="records per consume-transform-produce transaction"
    )
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
