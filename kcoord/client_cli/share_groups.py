"""`kcoord share-groups`: list, describe, reset and delete share groups (KIP-932) like Kafka 4.3's
`kafka-share-groups.sh`, over the Kafka protocol (so it works against kcoord and against Kafka).

Columns, messages and option checks follow Kafka 4.3.1's tool
(tools/src/main/java/org/apache/kafka/tools/consumer/group/ShareGroupCommand.java: listGroups,
describeGroups' printOffsets/printMembers/printStates, resetOffsets, deleteShareGroups,
deleteOffsets; ShareGroupCommandOptions.checkArgs), checked against its output on a Kafka 4.3.1 broker.
Differences (docs/compat.md), as `kcoord groups` has them: tables are sized to their content; every
error is one line on stderr with exit status 1 (Kafka prints some and exits 0); beyond Kafka's
--to-earliest/--to-latest/--to-datetime, --to-offset and --by-duration reset too.

APIs used: ApiVersions, Metadata, FindCoordinator, ListGroups, ShareGroupDescribe,
DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups, ListOffsets.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

from kcoord.client_cli.command import run_command
from kcoord.client_cli.groups import EARLIEST, LATEST, parse_datetime
from kcoord.client_cli.kafka_client import (
    COORDINATOR_RETRIABLE,
    Cluster,
    ToolError,
    TopicPartition,
    error_text,
)
from kcoord.client_cli.output import MISSING, print_table
from kcoord.client_cli.share_groups_args import PROG, parser, validate
from kcoord.protocol.errors import ErrorCode

__all__ = ["main"]

LIST_GROUPS, DELETE_GROUPS = 16, 42
SHARE_GROUP_DESCRIBE, DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS = 77, 90, 91, 92


# -- what the coordinator says -----------------------------------------------------------------------------


def _at_coordinator(cluster: Cluster, group: str, api_key: int, body: dict[str, Any]) -> dict[str, Any]:
    """One request at the group's coordinator, again while it moves or loads (bounded by --timeout)."""

    def retriable(response: dict[str, Any]) -> bool:
        errors = [response.get("error_code", 0)]
        errors += [g.get("error_code", 0) for g in response.get("groups", ())]
        errors += [g.get("error_code", 0) for g in response.get("results", ())]
        return any(e in COORDINATOR_RETRIABLE for e in errors)

    return cluster.with_coordinator(group, lambda conn: conn.request(api_key, body), retriable)


def list_share_groups(cluster: Cluster) -> list[tuple[str, str]]:
    """(group, state) of every share group, from ListGroups at every broker (Admin.listGroups with the
    share type); sorted by id."""
    found: dict[str, str] = {}
    for broker in cluster.brokers():
        response = cluster.connection(broker).request(LIST_GROUPS, {"states_filter": [], "types_filter": []})
        if response["error_code"] != ErrorCode.NONE:
            raise ToolError(f"ListGroups failed at {broker}: {error_text(response['error_code'])}")
        for g in response["groups"]:
            if (g.get("group_type") or "").lower() == "share" or g["protocol_type"] == "share":
                found[g["group_id"]] = g.get("group_state") or ""
    return sorted(found.items())


def describe_share_group(cluster: Cluster, group: str) -> dict[str, Any]:
    """ShareGroupDescribe of one group; a group that is not a share group is Kafka's error."""
    body = {"group_ids": [group], "include_authorized_operations": False}
    described = _at_coordinator(cluster, group, SHARE_GROUP_DESCRIBE, body)["groups"][0]
    if described["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND:
        raise ToolError(f"Group {group} not found.")
    if described["error_code"] != ErrorCode.NONE:
        raise ToolError(f"Group {group}: {described['error_message'] or error_text(described['error_code'])}")
    return described  # type: ignore[no-any-return]


def share_offsets(cluster: Cluster, group: str) -> list[dict[str, Any]]:
    """Admin.listShareGroupOffsets: every share partition of the group with its start offset, leader
    epoch and lag (None where there is no state), sorted by topic and partition."""
    body = {"groups": [{"group_id": group, "topics": None}]}
    answer = _at_coordinator(cluster, group, DESCRIBE_OFFSETS, body)["groups"][0]
    if answer["error_code"] != ErrorCode.NONE:
        raise ToolError(f"Group {group}: {answer['error_message'] or error_text(answer['error_code'])}")
    rows = []
    for topic in answer["topics"]:
        for p in topic["partitions"]:
            known = p["start_offset"] >= 0 and p["error_code"] == ErrorCode.NONE
            rows.append({
                "group": group, "topic": topic["topic_name"], "partition": p["partition_index"],
                "leader_epoch": p["leader_epoch"] if known else None,
                "start_offset": p["start_offset"] if known else None,
                "lag": p.get("lag") if known and p.get("lag", -1) >= 0 else None,
            })  # fmt: skip
    return sorted(rows, key=lambda r: (r["topic"], r["partition"]))


# -- --list and --describe -----------------------------------------------------------------------------------


def list_command(cluster: Cluster, args: argparse.Namespace) -> int:
    """ShareGroupService.listGroups: ids one a line; with --state a GROUP STATE table, filtered by the
    states given."""
    groups = list_share_groups(cluster)
    if args.state is None:
        for name, _ in groups:
            print(name)
        return 0
    wanted = {s.strip().lower() for s in args.state.split(",") if s.strip()}
    print_table(["GROUP", "STATE"], [[n, s] for n, s in groups if not wanted or s.lower() in wanted])
    return 0


def describe(cluster: Cluster, args: argparse.Namespace) -> int:
    for group in _group_names(cluster, args):
        described = describe_share_group(cluster, group)
        if args.members:
            _print_members(described, args.verbose)
        elif args.state is not None:
            _print_state(cluster, described, args.verbose)
        else:
            _print_offsets(share_offsets(cluster, group), group, args.verbose)
    return 0


def _print_offsets(rows: list[dict[str, Any]], group: str, verbose: bool) -> None:
    print()
    if not rows:
        print(f"Share group '{group}' has no offset information.")
        return
    columns = ["group", "topic", "partition", *(["leader_epoch"] if verbose else []), "start_offset", "lag"]
    print_table([c.upper().replace("_", "-") for c in columns], [[r[c] for c in columns] for r in rows])


def _print_members(described: dict[str, Any], verbose: bool) -> None:
    print()
    if not described["members"]:
        print(f"Share group '{described['group_id']}' has no active members.")
        return
    headers = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    headers += ["MEMBER-EPOCH", "ASSIGNMENT"] if verbose else ["ASSIGNMENT"]
    rows = []
    for m in described["members"]:
        tps = m["assignment"]["topic_partitions"]
        assignment = ";".join(
            f"{t['topic_name']}:{','.join(str(p) for p in sorted(t['partitions']))}"
            for t in sorted(tps, key=lambda t: t["topic_name"])
        )
        count = sum(len(t["partitions"]) for t in tps)
        row = [described["group_id"], m["member_id"], m["client_host"], m["client_id"], count]
        rows.append([*row, *([m["member_epoch"]] if verbose else []), assignment or MISSING])
    print_table(headers, rows)


def _print_state(cluster: Cluster, described: dict[str, Any], verbose: bool) -> None:
    group = described["group_id"]
    if not described["members"]:
        print(f"\nShare group '{group}' has no active members.")
    broker = cluster.coordinator(group)
    coordinator = f"{broker.host}:{broker.port}  ({broker.node_id})"
    headers = ["GROUP", "COORDINATOR (ID)", "STATE"]
    row: list[Any] = [group, coordinator, described["group_state"]]
    if verbose:
        headers += ["GROUP-EPOCH", "ASSIGNMENT-EPOCH"]
        row += [described["group_epoch"], described["assignment_epoch"]]
    print()
    print_table([*headers, "#MEMBERS"], [[*row, len(described["members"])]])


# -- --reset-offsets -----------------------------------------------------------------------------------------


def reset_offsets(cluster: Cluster, args: argparse.Namespace) -> int:
    """ShareGroupService.resetOffsets: only an empty group; the plan printed, set with --execute
    (AlterShareGroupOffsets)."""
    group = args.group[0]
    described = describe_share_group(cluster, group)
    if described["members"] or described["group_state"] not in ("Empty", "Dead"):
        raise ToolError(f"Share group '{group}' is not empty.")
    plan = _reset_plan(cluster, group, args)
    if args.execute:
        _alter(cluster, group, plan)
    print()
    print_table(
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
        [[group, t, p, o] for (t, p), o in sorted(plan.items())],
    )
    return 0


def _reset_plan(cluster: Cluster, group: str, args: argparse.Namespace) -> dict[TopicPartition, int]:
    if args.all_topics:
        partitions = [(r["topic"], r["partition"]) for r in share_offsets(cluster, group)]
        metadata = cluster.metadata({t for t, _ in partitions})
    else:
        metadata = cluster.metadata({t.split(":", 1)[0] for t in args.topic})
        partitions = _topic_partitions(args.topic, metadata.topics)
    if args.to_offset is not None:
        return dict.fromkeys(partitions, args.to_offset)
    if args.to_earliest or args.to_latest:
        return _offsets(cluster, partitions, EARLIEST if args.to_earliest else LATEST, metadata)
    # a duration reaching before 1970 is the epoch: a negative timestamp is a special one in ListOffsets
    at = (
        args.to_datetime
        if args.to_datetime is not None
        else max(0, int(time.time() * 1000) - args.by_duration)
    )
    found = _offsets(cluster, partitions, at, metadata)
    later = [tp for tp, offset in found.items() if offset < 0]  # nothing that late: the log end
    return found | _offsets(cluster, later, LATEST, metadata)


def _offsets(
    cluster: Cluster, partitions: list[TopicPartition], timestamp: int, metadata: Any
) -> dict[TopicPartition, int]:
    listed = cluster.list_offsets(partitions, timestamp, metadata)
    failed = [f"{t}-{p}: {error_text(e)}" for (t, p), (e, _) in listed.items() if e != ErrorCode.NONE]
    if failed:
        raise ToolError("ListOffsets failed: " + "; ".join(sorted(failed)))
    return {tp: offset for tp, (_, offset) in listed.items()}


def _topic_partitions(specs: Sequence[str], topics: dict[str, dict[int, int]]) -> list[TopicPartition]:
    """`T` (every partition) or `T:0,1,2`, as ShareGroupCommand.parseTopicPartitionsToReset."""
    out: list[TopicPartition] = []
    for spec in specs:
        name, _, listed = spec.partition(":")
        if name not in topics:
            raise ToolError(f"Topic {name} does not exist or has no partitions.")
        wanted = [int(p) for p in listed.split(",") if p.strip()] if listed else sorted(topics[name])
        out += [(name, p) for p in wanted]
    return out


def _alter(cluster: Cluster, group: str, plan: dict[TopicPartition, int]) -> None:
    by_topic: dict[str, list[dict[str, int]]] = {}
    for (topic, partition), offset in sorted(plan.items()):
        by_topic.setdefault(topic, []).append({"partition_index": partition, "start_offset": offset})
    body = {"group_id": group, "topics": [{"topic_name": t, "partitions": p} for t, p in by_topic.items()]}
    response = _at_coordinator(cluster, group, ALTER_OFFSETS, body)
    if response["error_code"] != ErrorCode.NONE:
        raise ToolError(response["error_message"] or error_text(response["error_code"]))
    failed = [
        f"{t['topic_name']}-{p['partition_index']}: {p['error_message'] or error_text(p['error_code'])}"
        for t in response["responses"]
        for p in t["partitions"]
        if p["error_code"] != ErrorCode.NONE
    ]
    if failed:
        raise ToolError("Resetting offsets failed: " + "; ".join(failed))


# -- --delete and --delete-offsets ----------------------------------------------------------------------


def delete_groups(cluster: Cluster, args: argparse.Namespace) -> int:
    """ShareGroupService.deleteShareGroups: only share groups; DeleteGroups at each coordinator."""
    failed: list[str] = []
    names = _group_names(cluster, args)
    shares = {name for name, _ in list_share_groups(cluster)}
    for name in names:
        if name not in shares:
            failed.append(f"Group '{name}' could not be deleted due to: Group '{name}' is not a share group.")
            continue
        response = _at_coordinator(cluster, name, DELETE_GROUPS, {"groups_names": [name]})
        error = response["results"][0]["error_code"]
        if error == ErrorCode.NON_EMPTY_GROUP:
            failed.append(f"Group '{name}' could not be deleted due to: Share group '{name}' is not EMPTY.")
        elif error != ErrorCode.NONE:
            failed.append(f"Group '{name}' could not be deleted due to: {error_text(error)}")
    if failed:
        raise ToolError("Deletion of some share groups failed: " + " ".join(f"* {f}" for f in failed))
    print(f"Deletion of requested share groups ({', '.join(repr(n) for n in names)}) was successful.")
    return 0


def delete_offsets(cluster: Cluster, args: argparse.Namespace) -> int:
    """ShareGroupService.deleteOffsets: DeleteShareGroupOffsets of the topics; a TOPIC STATUS table."""
    group = args.group[0]
    topics = list(dict.fromkeys(args.topic))
    body = {"group_id": group, "topics": [{"topic_name": t} for t in topics]}
    response = _at_coordinator(cluster, group, DELETE_OFFSETS, body)
    failure = None
    if response["error_code"] != ErrorCode.NONE:
        failure = response["error_message"] or error_text(response["error_code"])
        print(f"\nError: {failure}")
        statuses = [[t, f"Error: {failure}"] for t in topics]
    else:
        statuses = [[t["topic_name"], _status(t)] for t in response["responses"]]
    print()
    print_table(["TOPIC", "STATUS"], sorted(statuses))
    if failure is not None or any(status != "Successful" for _, status in statuses):
        raise ToolError(failure or f"deleting the offsets of share group '{group}' failed for some topics")
    return 0


def _status(topic: dict[str, Any]) -> str:
    if topic["error_code"] == ErrorCode.NONE:
        return "Successful"
    return f"Error: {topic['error_message'] or error_text(topic['error_code'])}"


def _group_names(cluster: Cluster, args: argparse.Namespace) -> list[str]:
    names = [name for name, _ in list_share_groups(cluster)] if args.all_groups else args.group
    return list(dict.fromkeys(names))


ACTIONS: dict[str, Callable[[Cluster, argparse.Namespace], int]] = {
    "list": list_command,
    "describe": describe,
    "reset_offsets": reset_offsets,
    "delete": delete_groups,
    "delete_offsets": delete_offsets,
}


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    validate(p, args)
    if args.to_datetime is not None:
        try:
            args.to_datetime = parse_datetime(args.to_datetime)
        except ToolError as exc:
            p.error(str(exc))
    action = next(ACTIONS[name] for name in ACTIONS if getattr(args, name))
    return run_command(PROG, args, action)
