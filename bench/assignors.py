"""Server-side assignor timing (KIP-848, issue 14): 1,000 members x 10,000 partitions.

    .venv/bin/python -m bench.assignors [--members 1000] [--partitions 10000] [--topics 10]

For `uniform` and `range`: the first assignment (no current ownership), the same membership again
(sticky: nothing moves), and one member joining (only its share moves). Run by hand on an idle
machine; figures are printed, nothing is asserted.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable
from typing import Any

from kcoord.coordinator.groups.consumer.assignors import ASSIGNORS, MemberSpec


def _timed(
    assign: Callable[..., Any], members: dict[str, MemberSpec], partitions: dict[Any, int]
) -> tuple[Any, float]:
    started = time.perf_counter()
    result = assign(members, partitions)
    return result, time.perf_counter() - started


def _current(members: dict[str, MemberSpec], result: Any) -> dict[str, MemberSpec]:
    return {
        m: MemberSpec(s.subscribed, {t: frozenset(p) for t, p in result.get(m, {}).items()})
        for m, s in members.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=10)
    args = parser.parse_args()
    topics = {uuid.uuid4(): args.partitions // args.topics for _ in range(args.topics)}
    subscribed = frozenset(topics)
    members = {f"member-{i:05d}": MemberSpec(subscribed) for i in range(args.members)}
    for name, assign in ASSIGNORS.items():
        first, first_s = _timed(assign, members, topics)
        stable = _current(members, first)
        _, again_s = _timed(assign, stable, topics)
        joined = {**stable, "member-new": MemberSpec(subscribed)}
        after, join_s = _timed(assign, joined, topics)
        moved = sum(
            len(ps - first.get(m, {}).get(t, set())) for m, tps in after.items() for t, ps in tps.items()
        )
        print(
            f"{name}: {args.members} members x {sum(topics.values())} partitions: "
            f"first {first_s * 1000:.0f} ms, "
            f"unchanged {again_s * 1000:.0f} ms, "
            f"one member joins {join_s * 1000:.0f} ms ({moved} partitions move)"
        )


if __name__ == "__main__":
    main()
