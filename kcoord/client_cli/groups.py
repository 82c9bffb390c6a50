"""`kcoord groups`: list, describe, reset and delete consumer groups, like Kafka's
`kafka-consumer-groups.sh`, over the Kafka protocol (so it works against kcoord and against Kafka).

Behaviour, column names and messages follow Apache Kafka's tool:
tools/src/main/java/org/apache/kafka/tools/consumer/group/ConsumerGroupCommand.java (listGroups,
describeGroups/printOffsets/printMembers/printStates, resetOffsets, deleteGroups, deleteOffsets) and
tools/src/main/java/org/apache/kafka/tools/GroupOffsetsResetter.java (the reset scenarios,
checkOffsetsRange, printOffsetsToReset). Differences (docs/compat.md): tables are sized to their
content; `--output json` prints one JSON document; every error is one line on stderr with a
non-zero exit (Kafka prints "Error: ..." and exits 0 for some of them).

Consumer-protocol groups (KIP-848) are described with ConsumerGroupDescribe, classic ones with
DescribeGroups, as Kafka's AdminClient does (kcoord/client_cli/describe.py); offsets and lag are the
same for both.

APIs used: ApiVersions, Metadata, FindCoordinator, ListGroups, ConsumerGroupDescribe, DescribeGroups,
OffsetFetch,
ListOffsets (log start/end and by timestamp, at each partition's leader), OffsetCommit (the
admin-style commit with generation -1 and no member id that Kafka's alterConsumerGroupOffsets sends),
DeleteGroups, OffsetDelete.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from kcoord.client_cli.command import add_connection_arguments, run_command
from kcoord.client_cli.describe import CLASSIC, CONSUMER, Group, Member, by_topic, describe_group
from kcoord.client_cli.group_configs import group_configs
from kcoord.client_cli.kafka_client import (
    COORDINATOR_RETRIABLE,
    Cluster,
    Connection,
    Metadata,
    ToolError,
    TopicPartition,
    error_text,
)
from kcoord.client_cli.output import MISSING, ToolParser, print_json, print_table
from kcoord.protocol.errors import ErrorCode

__all__ = ["main"]

PROG = "kcoord groups"
LATEST, EARLIEST = -1, -2  # ListOffsets special timestamps
OFFSET_COMMIT, OFFSET_FETCH, LIST_GROUPS = 8, 9, 16
# The newest versions that name topics: v10 of both names them by id (KIP-848); this tool works by name.
NAMED_TOPICS_UNTIL = {OFFSET_COMMIT: 9, OFFSET_FETCH: 9}
DELETE_GROUPS, OFFSET_DELETE = 42, 47
INACTIVE_STATES = ("Empty", "Dead")  # ConsumerGroupCommand.resetOffsets resets only these
REBALANCING_STATES = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


# -- what the broker says about groups ------------------------------------------------------------------


def list_groups(cluster: Cluster) -> list[dict[str, str]]:
    """ListGroups at every broker (each lists the groups it coordinates); consumer groups only:
    protocol type "consumer" or "" (Kafka's AdminClient.listConsumerGroups filter), of both types:
    classic and consumer-protocol (KIP-848; ListGroups v5's group type, "classic" from older
    brokers, which have no other)."""
    found: dict[str, dict[str, str]] = {}
    for broker in cluster.brokers():
        conn = cluster.connection(broker)
        response = conn.request(LIST_GROUPS, {"states_filter": [], "types_filter": []})
        if response["error_code"] != ErrorCode.NONE:
            raise ToolError(f"ListGroups failed at {broker}: {error_text(response['error_code'])}")
        for g in response["groups"]:
            if g["protocol_type"] in ("consumer", ""):
                found[g["group_id"]] = {
                    "group": g["group_id"],
                    "type": (g["group_type"] or CLASSIC).lower(),
                    "protocol_type": g["protocol_type"],
                    "state": g["group_state"] or "",
                }
    groups = sorted(found.values(), key=lambda g: g["group"])
    for g in groups:
        if not g["state"]:  # ListGroups before v4 carries no state: ask the coordinator
            g["state"] = describe_group(cluster, g["group"]).state
    return groups


def committed_offsets(cluster: Cluster, group: str) -> dict[TopicPartition, int]:
    """OffsetFetch of every committed partition of `group` (null topics = all, v2+)."""

    def call(conn: Connection) -> tuple[int, list[dict[str, Any]]]:
        version = conn.version(OFFSET_FETCH, NAMED_TOPICS_UNTIL[OFFSET_FETCH])
        if version < 2:
            raise ToolError(f"the broker at {conn.address} does not support OffsetFetch v2+")
        if version >= 8:  # KIP-709: batched groups
            body = {"groups": [{"group_id": group, "topics": None}], "require_stable": False}
            response = conn.request(OFFSET_FETCH, body, version)["groups"][0]
        else:
            response = conn.request(OFFSET_FETCH, {"group_id": group, "topics": None}, version)
        return response["error_code"], response["topics"]

    error, topics = cluster.with_coordinator(group, call, lambda r: r[0] in COORDINATOR_RETRIABLE)
    if error not in (ErrorCode.NONE, ErrorCode.GROUP_ID_NOT_FOUND):
        raise ToolError(f"cannot fetch the offsets of group '{group}': {error_text(error)}")
    offsets = {}
    for topic in topics:
        for p in topic["partitions"]:
            if p["error_code"] == ErrorCode.NONE and p["committed_offset"] >= 0:
                offsets[topic["name"], p["partition_index"]] = p["committed_offset"]
    return offsets


# -- --describe ------------------------------------------------------------------------------------------


def offset_rows(cluster: Cluster, group: Group) -> list[dict[str, Any]]:
    """ConsumerGroupCommand.collectGroupsOffsets: one row per assigned partition (members with the
    most partitions first), then the committed partitions nobody owns; lag = log end - committed."""
    committed = committed_offsets(cluster, group.group)
    owners: list[tuple[Member | None, list[TopicPartition]]] = [
        (m, m.assignment) for m in sorted(group.members, key=lambda m: -len(m.assignment)) if m.assignment
    ]
    assigned = {tp for _, tps in owners for tp in tps}
    owners.append((None, sorted(tp for tp in committed if tp not in assigned)))
    every = [tp for _, tps in owners for tp in tps]
    metadata = cluster.metadata({t for t, _ in every})
    ends = cluster.list_offsets(every, LATEST, metadata)
    rows = []
    for member, tps in owners:
        for tp in sorted(tps):
            error, end = ends.get(tp, (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1))
            log_end = end if error == ErrorCode.NONE and end >= 0 else None
            current = committed.get(tp)
            rows.append(
                {
                    "group": group.group,
                    "topic": tp[0],
                    "partition": tp[1],
                    "current_offset": current,
                    "log_end_offset": log_end,
                    "lag": None if current is None or log_end is None else log_end - current,
                    "consumer_id": member.member_id if member else None,
                    "host": member.host if member else None,
                    "client_id": member.client_id if member else None,
                }
            )
    return rows


def _warn_state(group: Group) -> bool:
    """ConsumerGroupCommand.shouldPrintMemberState's notes; False for a group that does not exist."""
    if group.state == "Dead":
        return False
    if group.state == "Empty":
        print(f"Consumer group '{group.group}' has no active members.", file=sys.stderr)
    elif group.state in REBALANCING_STATES:
        print(f"Warning: Consumer group '{group.group}' is rebalancing.", file=sys.stderr)
    return True


def describe(cluster: Cluster, args: argparse.Namespace) -> int:
    documents = []
    for name in _group_names(cluster, args):
        group = describe_group(cluster, name)
        if group.state == "Dead":
            raise ToolError(f"Consumer group '{name}' does not exist.")
        rows = offset_rows(cluster, group)
        if args.output == "json":
            documents.append({**_group_json(group, rows), "configs": group_configs(cluster, name)})
            continue
        _warn_state(group)
        if args.configs:  # the group's configs (issue 33): kafka-configs.sh --entity-type groups
            rows_of = [[c["name"], c["value"], c["source"]] for c in group_configs(cluster, name)]
            print_table(["CONFIG", "VALUE", "SOURCE"], rows_of)
        elif args.members:
            _print_members(group, args.verbose)
        elif args.state is not None:
            _print_state(group, args.verbose)
        if args.offsets or not (args.members or args.state is not None):
            _print_offsets(rows)
    if args.output == "json":
        print_json(documents)
    return 0


def _group_json(group: Group, rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "group": group.group,
        "type": group.group_type,
        "state": group.state,
        "protocol_type": group.protocol_type,
        "assignment_strategy": group.protocol,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "coordinator": {
            "id": group.coordinator.node_id,
            "host": group.coordinator.host,
            "port": group.coordinator.port,
        },
        "members": [m.to_json() for m in group.members],
        "offsets": [{k: v for k, v in row.items() if k != "group"} for row in rows],
    }


def _print_offsets(rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    columns = (
        "group",
        "topic",
        "partition",
        "current_offset",
        "log_end_offset",
        "lag",
        "consumer_id",
        "host",
        "client_id",
    )
    print_table(
        [
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        ],
        [[row[c] for c in columns] for row in rows],
    )


def _print_members(group: Group, verbose: bool) -> None:
    """ConsumerGroupCommand.printMembers; --verbose adds each member's epoch and assignment and the
    target it reconciles to (the group's target assignment epoch), "-" where a classic group has none,
    and UPGRADED while a consumer group has members of both protocols (online migration)."""
    with_instance = any(m.group_instance_id for m in group.members)
    upgraded = {m.upgraded for m in group.members}
    migrating = verbose and True in upgraded and False in upgraded
    headers = [
        "GROUP",
        "CONSUMER-ID",
        *(["GROUP-INSTANCE-ID"] if with_instance else []),
        "HOST",
        "CLIENT-ID",
        "#PARTITIONS",
        *(["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"] if verbose else []),
        *(["UPGRADED"] if migrating else []),
    ]
    rows = []
    for m in group.members:
        row: list[Any] = [group.group, m.member_id]
        if with_instance:
            row.append(m.group_instance_id or "")
        row += [m.host, m.client_id, len(m.assignment)]
        if verbose:
            row += [
                m.member_epoch,
                _assignment_string(m.assignment) or MISSING,
                group.assignment_epoch if m.member_epoch is not None else None,
                _assignment_string(m.target_assignment) or MISSING,
            ]
        if migrating:
            row.append(None if m.upgraded is None else str(m.upgraded).lower())  # Java's Boolean
        rows.append(row)
    print_table(headers, rows)


def _assignment_string(assignment: list[TopicPartition]) -> str:
    """`topic:0,1;other:2` (ConsumerGroupCommand.getAssignmentString)."""
    return ";".join(f"{t}:{','.join(map(str, ps))}" for t, ps in by_topic(assignment).items())


def _print_state(group: Group, verbose: bool) -> None:
    """ConsumerGroupCommand.printStates; --verbose adds GROUP-EPOCH and TARGET-ASSIGNMENT-EPOCH
    ("-" for a classic group)."""
    c = group.coordinator
    epochs = ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"] if verbose else []
    print_table(
        ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", *epochs, "#MEMBERS"],
        [
            [
                group.group,
                f"{c.host}:{c.port}  ({c.node_id})",
                group.protocol or MISSING,
                group.state,
                *([group.group_epoch, group.assignment_epoch] if verbose else []),
                len(group.members),
            ]
        ],
    )


# -- --list -------------------------------------------------------------------------------------------------


def list_command(cluster: Cluster, args: argparse.Namespace) -> int:
    """ConsumerGroupCommand.listGroups: ids one a line; with --type and/or --state a GROUP [TYPE]
    [STATE] table, filtered by the values given (case-insensitive)."""
    groups = list_groups(cluster)
    if args.state:  # `--list --state Stable,Empty` filters (case-insensitive, as GroupState.parse)
        wanted = {s.strip().lower() for s in args.state.split(",")}
        groups = [g for g in groups if g["state"].lower() in wanted]
    if args.type:  # `--list --type consumer` (GroupType.parse)
        types = {t.strip().lower() for t in args.type.split(",")}
        groups = [g for g in groups if g["type"] in types]
    if args.output == "json":
        print_json(groups)
    elif args.state is not None or args.type is not None:
        columns = [
            "group",
            *(["type"] if args.type is not None else []),
            *(["state"] if args.state is not None else []),
        ]
        print_table([c.upper() for c in columns], [[g[c] for c in columns] for g in groups])
    else:
        for g in groups:  # plain ids, one a line, as kafka-consumer-groups.sh --list
            print(g["group"])
    return 0


# -- --reset-offsets ------------------------------------------------------------------------------------


def reset_offsets(cluster: Cluster, args: argparse.Namespace) -> int:
    """ConsumerGroupCommand.resetOffsets: only Empty (or unknown, "Dead") groups; dry run unless
    --execute."""
    plans: list[dict[str, Any]] = []
    refused = []
    for name in _group_names(cluster, args):
        state = describe_group(cluster, name).state
        if state not in INACTIVE_STATES:
            # ConsumerGroupCommand.resetOffsets' message, word for word.
            refused.append(
                f"Assignments can only be reset if the group '{name}' is inactive, "
                f"but the current state is {state}."
            )
            continue
        plan = _reset_plan(cluster, name, args)
        if args.execute:
            _commit(cluster, name, plan)
        plans += [{"group": name, "topic": t, "partition": p, "new_offset": o} for (t, p), o in plan.items()]
    if args.output == "json":
        print_json({"executed": bool(args.execute), "offsets": plans})
    elif plans:
        print_table(
            ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
            [[r["group"], r["topic"], r["partition"], r["new_offset"]] for r in plans],
        )
    if refused:
        raise ToolError(" ".join(refused))
    return 0


def _reset_plan(cluster: Cluster, group: str, args: argparse.Namespace) -> dict[TopicPartition, int]:
    committed = committed_offsets(cluster, group) if args.all_topics or args.shift_by is not None else {}
    if args.all_topics:
        partitions = sorted(committed)
        metadata = cluster.metadata({t for t, _ in partitions})
    else:
        metadata = cluster.metadata({t.split(":", 1)[0] for t in args.topic})
        partitions = _topic_partitions(args.topic, metadata)
    _check_partitions(partitions, metadata)
    if args.to_earliest or args.to_latest:
        return _log_offsets(cluster, partitions, EARLIEST if args.to_earliest else LATEST, metadata)
    if args.to_datetime is not None:
        return _offsets_for_time(cluster, partitions, args.to_datetime, metadata)
    if args.to_offset is not None:
        requested = dict.fromkeys(partitions, args.to_offset)
    else:
        missing = [tp for tp in partitions if tp not in committed]
        if missing:  # GroupOffsetsResetter.resetByShiftBy
            raise ToolError(
                f"Cannot shift offset for partition {_tp(missing[0])} "
                "since there is no current committed offset"
            )
        requested = {tp: committed[tp] + args.shift_by for tp in partitions}
    return _clamp(cluster, requested, metadata)


def _tp(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"  # TopicPartition.toString


def _topic_partitions(topic_args: Sequence[str], metadata: Metadata) -> list[TopicPartition]:
    """`T` = every partition of T; `T:0,2` = those (GroupOffsetsResetter.parseTopicPartitionsToReset)."""
    partitions: list[TopicPartition] = []
    for arg in topic_args:
        topic, sep, spec = arg.partition(":")
        if not sep:
            if topic not in metadata.topics:
                error = metadata.topic_errors.get(topic, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                raise ToolError(f"topic '{topic}': {error_text(error)}")
            partitions += [(topic, p) for p in sorted(metadata.topics[topic])]
            continue
        for item in spec.split(","):
            if not item.strip().lstrip("-").isdigit():
                raise ToolError(f"Invalid partition '{item}' specified in topic arg '{arg}'")
            partitions.append((topic, int(item)))
    return list(dict.fromkeys(partitions))


def _check_partitions(partitions: Iterable[TopicPartition], metadata: Metadata) -> None:
    """GroupOffsetsResetter.checkAllTopicPartitionsValid: they exist and have a leader."""
    partitions = list(partitions)
    absent = [tp for tp in partitions if tp[1] not in metadata.topics.get(tp[0], {})]
    if absent:
        raise ToolError(f'The partitions "{",".join(map(_tp, absent))}" do not exist')
    leaderless = [tp for tp in partitions if metadata.topics[tp[0]][tp[1]] < 0]
    if leaderless:
        raise ToolError(f'The partitions "{",".join(map(_tp, leaderless))}" have no leader')


def _log_offsets(
    cluster: Cluster, partitions: list[TopicPartition], timestamp: int, metadata: Metadata
) -> dict[TopicPartition, int]:
    found = cluster.list_offsets(partitions, timestamp, metadata)
    result = {}
    for tp in partitions:
        error, offset = found.get(tp, (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1))
        if error != ErrorCode.NONE or offset < 0:
            which = {EARLIEST: "starting", LATEST: "ending"}.get(timestamp, "by timestamp")
            raise ToolError(
                f"Error getting {which} offset of topic partition: {_tp(tp)} ({error_text(error)})"
            )
        result[tp] = offset
    return result


def _offsets_for_time(
    cluster: Cluster, partitions: list[TopicPartition], when: int, metadata: Metadata
) -> dict[TopicPartition, int]:
    """GroupOffsetsResetter.getLogTimestampOffsets: the first offset at or after `when`; a partition
    with no such record falls back to its log end, with Kafka's warning."""
    found = cluster.list_offsets(partitions, when, metadata)
    result, fallback = {}, []
    for tp in partitions:
        error, offset = found.get(tp, (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1))
        if error != ErrorCode.NONE:
            raise ToolError(
                f"Error getting offset by timestamp of topic partition: {_tp(tp)} ({error_text(error)})"
            )
        if offset < 0:
            print(
                f"Warn: Partition {tp[1]} from topic {tp[0]} is empty. Falling back to latest known offset.",
                file=sys.stderr,
            )
            fallback.append(tp)
        else:
            result[tp] = offset
    result.update(_log_offsets(cluster, fallback, LATEST, metadata))
    return {tp: result[tp] for tp in partitions}


def _clamp(
    cluster: Cluster, requested: dict[TopicPartition, int], metadata: Metadata
) -> dict[TopicPartition, int]:
    """GroupOffsetsResetter.checkOffsetsRange: above the log end -> the end, below the start -> the
    start, each with Kafka's warning."""
    partitions = list(requested)
    starts = _log_offsets(cluster, partitions, EARLIEST, metadata)
    ends = _log_offsets(cluster, partitions, LATEST, metadata)
    result = {}
    for tp, offset in requested.items():
        if offset > ends[tp]:
            print(
                f"New offset ({offset}) is higher than latest offset for topic partition {_tp(tp)}. "
                f"Value will be set to {ends[tp]}.",
                file=sys.stderr,
            )
            offset = ends[tp]
        elif offset < starts[tp]:
            print(
                f"New offset ({offset}) is lower than earliest offset for topic partition {_tp(tp)}. "
                f"Value will be set to {starts[tp]}.",
                file=sys.stderr,
            )
            offset = starts[tp]
        result[tp] = offset
    return result


def _commit(cluster: Cluster, group: str, offsets: dict[TopicPartition, int]) -> None:
    """OffsetCommit with generation -1 and an empty member id: what Kafka's
    AdminClient.alterConsumerGroupOffsets sends; a coordinator accepts it only while the group has no
    members."""
    if not offsets:
        return
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            {"partition_index": partition, "committed_offset": offset, "committed_metadata": ""}
        )
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
    }

    def errors_of(response: dict[str, Any]) -> list[tuple[TopicPartition, int]]:
        return [
            ((t["name"], p["partition_index"]), p["error_code"])
            for t in response["topics"]
            for p in t["partitions"]
            if p["error_code"]
        ]

    response = cluster.with_coordinator(
        group,
        lambda conn: conn.request(
            OFFSET_COMMIT, body, conn.version(OFFSET_COMMIT, NAMED_TOPICS_UNTIL[OFFSET_COMMIT])
        ),
        lambda r: any(e in COORDINATOR_RETRIABLE for _, e in errors_of(r)),
    )
    failed = errors_of(response)
    if failed:
        tp, error = failed[0]
        raise ToolError(
            f"committing the new offsets of group '{group}' failed ({_tp(tp)}): {error_text(error)}"
        )


# -- --delete and --delete-offsets ----------------------------------------------------------------------


def delete_groups(cluster: Cluster, args: argparse.Namespace) -> int:
    results = []
    for name in _group_names(cluster, args):
        response = cluster.with_coordinator(
            name,
            lambda conn, name=name: conn.request(DELETE_GROUPS, {"groups_names": [name]}),  # type: ignore[misc]
            lambda r: any(g["error_code"] in COORDINATOR_RETRIABLE for g in r["results"]),
        )
        for result in response["results"]:
            error = result["error_code"]
            results.append({"group": result["group_id"], "error": error_text(error) if error else None})
    failed = [r for r in results if r["error"]]
    if args.output == "json":
        print_json(results)
    elif not failed:  # ConsumerGroupCommand.deleteGroups' messages
        names = ", ".join(f"'{r['group']}'" for r in results)
        print(f"Deletion of requested consumer groups ({names}) was successful.")
    if failed:
        raise ToolError(
            "Deletion of some consumer groups failed: "
            + "; ".join(f"Group '{r['group']}' could not be deleted due to: {r['error']}" for r in failed)
        )
    return 0


def delete_offsets(cluster: Cluster, args: argparse.Namespace) -> int:
    """ConsumerGroupCommand.deleteOffsets: OffsetDelete for the given topics (all their partitions)
    or `T:p,q`; a TOPIC/PARTITION/STATUS table."""
    group = args.group[0]
    metadata = cluster.metadata({t.split(":", 1)[0] for t in args.topic})
    partitions = _topic_partitions(args.topic, metadata)
    topics: dict[str, list[dict[str, int]]] = {}
    for topic, partition in partitions:
        topics.setdefault(topic, []).append({"partition_index": partition})
    body = {"group_id": group, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
    response = cluster.with_coordinator(
        group,
        lambda conn: conn.request(OFFSET_DELETE, body),
        lambda r: r["error_code"] in COORDINATOR_RETRIABLE,
    )
    top = response["error_code"]
    rows = [
        {
            "topic": t["name"],
            "partition": p["partition_index"],
            "error": error_text(p["error_code"]) if p["error_code"] else None,
        }
        for t in response["topics"]
        for p in t["partitions"]
    ]
    rows.sort(key=lambda r: (r["topic"], r["partition"]))
    if args.output == "json":
        print_json({"group": group, "error": error_text(top) if top else None, "partitions": rows})
    else:
        if top == ErrorCode.NONE and not any(r["error"] for r in rows):
            print(f"Request succeeded for deleting offsets from group {group}.")
        if rows:
            print_table(
                ["TOPIC", "PARTITION", "STATUS"],
                [
                    [r["topic"], r["partition"], f"Error: {r['error']}" if r["error"] else "Successful"]
                    for r in rows
                ],
            )
    if top != ErrorCode.NONE:
        raise ToolError(f"deleting offsets from group '{group}' failed: {error_text(top)}")
    if any(r["error"] for r in rows):
        raise ToolError("Encountered some partition-level error, see the follow-up details.")
    return 0


# -- the command line -------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = ToolParser(
        prog=PROG,
        description="List, describe, reset and delete consumer groups "
        "(like kafka-consumer-groups.sh), over the Kafka protocol.",
    )
    add_connection_arguments(p)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="list the consumer groups")
    action.add_argument(
        "--describe", action="store_true", help="describe groups (offsets and lag by default)"
    )
    action.add_argument(
        "--reset-offsets", action="store_true", help="reset committed offsets (dry run unless --execute)"
    )
    action.add_argument("--delete", action="store_true", help="delete groups (they must be empty)")
    action.add_argument("--delete-offsets", action="store_true", help="delete a group's offsets of --topic")
    p.add_argument("--group", action="append", default=[], metavar="GROUP", help="the group (repeatable)")
    p.add_argument("--all-groups", action="store_true", help="every consumer group (describe, reset, delete)")
    p.add_argument("--members", action="store_true", help="--describe: the members")
    p.add_argument("--offsets", action="store_true", help="--describe: offsets and lag (the default)")
    p.add_argument("--configs", action="store_true", help="--describe: the group's configs and their source")
    p.add_argument(
        "--state",
        nargs="?",
        const="",
        metavar="STATES",
        help="--describe: the group state; --list: a STATE column, optionally only STATES (a,b)",
    )
    p.add_argument(
        "--type",
        nargs="?",
        const="",
        metavar="TYPES",
        help="--list: a TYPE column (classic, consumer), optionally only TYPES (a,b)",
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="--describe --members: epochs, current and target assignments; --state: the epochs",
    )
    p.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="TOPIC[:P1,P2]",
        help="--reset-offsets/--delete-offsets: a topic, or some of its partitions (repeatable)",
    )
    p.add_argument(
        "--all-topics", action="store_true", help="--reset-offsets: every partition the group committed"
    )
    scenario = p.add_mutually_exclusive_group()
    scenario.add_argument("--to-earliest", action="store_true")
    scenario.add_argument("--to-latest", action="store_true")
    scenario.add_argument("--to-offset", type=int, metavar="N")
    scenario.add_argument("--shift-by", type=int, metavar="N")
    scenario.add_argument(
        "--to-datetime", metavar="ISO", help="YYYY-MM-DDTHH:mm:SS[.sss][Z|+hh:mm] (local time without a zone)"
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--dry-run", action="store_true", help="--reset-offsets: show the new offsets only (the default)"
    )
    mode.add_argument("--execute", action="store_true", help="--reset-offsets: commit the new offsets")
    p.add_argument("--output", choices=("table", "json"), default="table")
    p.add_argument(
        "--timeout",
        type=int,
        default=5000,
        metavar="MS",
        help="per request and for coordinator retries (default 5000, as Kafka's --timeout)",
    )
    return p


def parse_datetime(value: str) -> int:
    """Milliseconds since the epoch of an ISO-8601 time, as Kafka's Utils.getDateTime: a 'T' is
    required; without a zone the time is local."""
    if "T" not in value:
        raise ToolError(
            f"Error parsing timestamp '{value}'. It does not contain a 'T' according to ISO8601 format"
        )
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ToolError(
            f"Error parsing timestamp '{value}': expected YYYY-MM-DDTHH:mm:SS[.sss][zone]"
        ) from None
    return int(parsed.timestamp() * 1000)  # naive datetimes are local time, like SimpleDateFormat


def _validate(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Kafka's ConsumerGroupCommandOptions.checkArgs, the parts that apply here."""
    needs_group = args.describe or args.reset_offsets or args.delete
    if needs_group and not args.group and not args.all_groups:
        p.error("Option --group or --all-groups is required")
    if args.delete_offsets and len(args.group) != 1:
        p.error("Option --delete-offsets takes exactly one --group")
    if args.delete_offsets and not args.topic:
        p.error("Option --delete-offsets needs --topic")
    if args.reset_offsets:
        scenarios = (
            args.to_earliest,
            args.to_latest,
            args.to_offset is not None,
            args.shift_by is not None,
            args.to_datetime is not None,
        )
        if not any(scenarios):
            p.error(
                "Option --reset-offsets requires one of --to-earliest, --to-latest, --to-offset, "
                "--shift-by, --to-datetime"
            )
        if bool(args.topic) == args.all_topics:
            p.error("One of the reset scopes should be defined: --all-topics, --topic.")
    _validate_type(p, args)
    if args.timeout <= 0:
        p.error("--timeout must be positive")


def _validate_type(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--type: only with --list, only Kafka's consumer group types (consumerGroupTypesFromString)."""
    if args.type is not None and not args.list:
        p.error("Option --type is only valid with --list")
    unknown = {t.strip().lower() for t in (args.type or "").split(",") if t.strip()} - {CLASSIC, CONSUMER}
    if unknown:
        p.error(f"Invalid types list '{args.type}'. Valid types are: {CLASSIC}, {CONSUMER}")


def _group_names(cluster: Cluster, args: argparse.Namespace) -> list[str]:
    names = [g["group"] for g in list_groups(cluster)] if args.all_groups else args.group
    return list(dict.fromkeys(names))


ACTIONS: dict[str, Callable[[Cluster, argparse.Namespace], int]] = {
    "list": list_command,
    "describe": describe,
    "reset_offsets": reset_offsets,
    "delete": delete_groups,
    "delete_offsets": delete_offsets,
}


def main(argv: Sequence[str] | None = None) -> int:
    p = _parser()
    args = p.parse_args(argv)
    _validate(p, args)
    if args.to_datetime is not None:
        try:
            args.to_datetime = parse_datetime(args.to_datetime)
        except ToolError as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 1
    action = next(ACTIONS[name] for name in ACTIONS if getattr(args, name))
    return run_command(PROG, args, action)
