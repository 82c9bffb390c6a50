"""Test controls on groups (`kcoord serve --enable-test-controls`): make a rebalance or an expiry happen now.

Each control runs the same transition the protocol would run (the Rebalancer's own verbs), so the
group goes through exactly the states a real trigger would drive it through; nothing here shadows the
state machine with a flag. Runtime changes of settings replace the frozen `GroupConfig` that every
handler reads per request.

Consumer-protocol groups (KIP-848): expiring a member fences it as its session timer would
(ConsumerGroupService.fence). There is no rebalance to force: the coordinator computes assignments
itself whenever the group epoch moves, and nothing a client could do bumps it without changing the
group (a new subscription, a topic change), so that control answers 409 for them.
"""

from __future__ import annotations

import dataclasses
import logging

from kcoord.coordinator.groups.config import GroupConfig
from kcoord.coordinator.groups.consumer.service import ConsumerGroupService
from kcoord.coordinator.groups.group import Group
from kcoord.coordinator.groups.rebalance import Rebalancer
from kcoord.coordinator.groups.runtime import Runtime
from kcoord.coordinator.groups.state import CAN_REBALANCE, GroupState

__all__ = ["FORCED_REASON", "GroupControls", "TestControlError"]

log = logging.getLogger("coordinator.groups")

FORCED_REASON = "rebalance forced by a test control"
EXPIRED_REASON = "session expired (test control)"
RUNTIME_SETTINGS = (
    "group_initial_rebalance_delay_ms",
    "group_min_session_timeout_ms",
    "group_max_session_timeout_ms",
)


class TestControlError(Exception):
    """A control that cannot apply; `status` is the HTTP status the endpoint answers."""

    __test__ = False  # not a pytest class

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class GroupControls:
    __test__ = False

    def __init__(
        self, rt: Runtime, rebalancer: Rebalancer, consumer: ConsumerGroupService | None = None
    ) -> None:
        self.rt = rt
        self.rb = rebalancer
        self.consumer = consumer

    def force_rebalance(self, group_id: str) -> None:
        """Stable or CompletingRebalance -> PreparingRebalance, as a leader rejoin would (Kafka's
        prepareRebalance). Members learn it from their next Heartbeat (REBALANCE_IN_PROGRESS) and
        rejoin; a group already in PreparingRebalance is left as it is."""
        if self._consumer_group(group_id):
            raise TestControlError(
                409,
                f"group {group_id} is a consumer-protocol group (KIP-848): the coordinator assigns "
                "its partitions itself, there is no rebalance to force",
            )
        group = self._group(group_id)
        if group.state is GroupState.PREPARING_REBALANCE:
            return
        if not group.members or group.state not in CAN_REBALANCE:
            raise TestControlError(409, f"group {group_id} is {group.state.value} without members")
        log.info("group_id=%s test control: forcing a rebalance", group_id)
        self.rb.prepare_rebalance(group, FORCED_REASON)

    def expire_member(self, group_id: str, member_id: str) -> None:
        """What the member's session timer does when it fires (Kafka's onExpireHeartbeat, or for a
        consumer-protocol group its session timeout's fencing), now."""
        if self._consumer_group(group_id):
            self._fence(group_id, member_id)
            return
        group = self._group(group_id)
        if member_id not in group.members:
            raise TestControlError(404, f"group {group_id} has no member {member_id}")
        log.info("group_id=%s member_id=%s test control: expiring the session now", group_id, member_id)
        self.rb.remove_member_and_update(group, member_id, EXPIRED_REASON)

    def update_config(self, changes: dict[str, int]) -> GroupConfig:
        """Change the initial rebalance delay and the session-timeout bounds; later requests see them."""
        unknown = sorted(set(changes) - set(RUNTIME_SETTINGS))
        if unknown:
            raise TestControlError(400, f"cannot change {unknown} at runtime; only {list(RUNTIME_SETTINGS)}")
        for name, value in changes.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise TestControlError(400, f"{name} must be a non-negative integer, got {value!r}")
        config = dataclasses.replace(self.rt.config, **changes)  # type: ignore[arg-type]  # ints only
        if config.group_min_session_timeout_ms > config.group_max_session_timeout_ms:
            raise TestControlError(400, "group_min_session_timeout_ms exceeds group_max_session_timeout_ms")
        self.rt.config = config
        log.info("test control: group settings now %s", {name: getattr(config, name) for name in changes})
        return config

    def _consumer_group(self, group_id: str) -> bool:
        return self.consumer is not None and group_id in self.rt.consumer_groups

    def _fence(self, group_id: str, member_id: str) -> None:
        assert self.consumer is not None
        if self.rt.phase_error(group_id) is not None:
            raise TestControlError(503, f"the coordinator is {self.rt.phases.phase(group_id).value}")
        if member_id not in self.rt.consumer_groups[group_id].members:
            raise TestControlError(404, f"group {group_id} has no member {member_id}")
        log.info("group_id=%s member_id=%s test control: expiring the session now", group_id, member_id)
        self.consumer.fence(group_id, member_id, EXPIRED_REASON)

    def _group(self, group_id: str) -> Group:
        if self.rt.phase_error(group_id) is not None:
            raise TestControlError(503, f"the coordinator is {self.rt.phases.phase(group_id).value}")
        group = self.rt.group(group_id)
        if group is None or group.state is GroupState.DEAD:
            raise TestControlError(404, f"no group {group_id}")
        return group
