"""The composition root: what builds and runs a kcoord node.

`config` (every `kcoord serve` flag), `app_state` (storage, recovery and the coordinators opened for a
data directory), `app` (startup, serve, shutdown), `cli` (the `kcoord` command), `http` and `metrics`
(/metrics, /readyz, /v1/...), the inspector views and the test controls (`controls/`). Nothing below it
imports it.
"""
