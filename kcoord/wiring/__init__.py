"""The composition root: what builds and runs a kcoord node.

`config` (every `kcoord serve` flag), `app_state` (storage, recovery and the coordinators, opened
through `backends`: the data directory's are `local_backends`, cluster mode's kcoord/cluster/backends.py),
`app` (startup, serve, shutdown), `cli` (the `kcoord` command), `http` and `metrics`
(/metrics, /readyz, /v1/...), the inspector views and the test controls (`controls/`). Nothing below it
imports it.
"""
