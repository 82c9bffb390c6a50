"""The server-side test controls (`kcoord serve --enable-test-controls`): reset, a movable clock, faults,
the request log and inspection, as coroutines on the server's event loop (docs: fixtures.md's table).

    controls = app.controls                       # TestControls, or None without the flag
    await controls.reset()                        # {"reset_ms": float}
    await controls.advance(12.5)                  # {"advanced_ms": int, "now_ms": int, "fired": int}
    await controls.create_topic("t", 3, {"retention.ms": "1000"})   # {"name", "partitions"}; 409 if it exists
    await controls.records("t")                   # [{"partition", "offset", "key", "value", "headers",
                                                  #   "timestamp", "aborted"}] (bytes)
    await controls.committed("g")                 # [{"topic", "partition", "offset", "metadata"}]
    await controls.group("g")                     # the group view; 404 if there is none
    await controls.fail("Produce", "NOT_LEADER_OR_FOLLOWER", count=1, topic="t", partition=0, group=None)
    await controls.delay("Fetch", 500, count=1)
    await controls.disconnect("FindCoordinator", count=1)
    await controls.fired(); await controls.faults(); await controls.clear_faults()
    await controls.requests(since=0)              # request-log entries with seq > since, each with its
                                                  #   state: answered, in flight, parked, delayed, dropped
    await controls.configure(group_initial_rebalance_delay_ms=0)    # the runtime settings in force
    await app.abandon()                           # a crash: a new App on the directory recovers

A call that cannot apply raises `ControlError(status, message)` (400, 404, 409; 503 while storage fails).
"""

from kcoord.wiring.controls.names import ControlError
from kcoord.wiring.controls.surface import TestControls

__all__ = ["ControlError", "TestControls"]
