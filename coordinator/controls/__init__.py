"""The server-side test controls (`kcoord serve --enable-test-controls`): reset, a movable clock, faults,
the request log and inspection. `TestControls` is the whole surface; docs: fixtures.md's table."""

from kcoord.coordinator.controls.names import ControlError
from kcoord.coordinator.controls.surface import TestControls

__all__ = ["ControlError", "TestControls"]
