"""The broker edge: what a Kafka client talks to.

Connections and listeners (asyncio + uvloop), the SASL gate, one thin module per API (`apis/`), the
topics and their configs (`topics/`, the data plane's glue to `partition_log`), authentication and
authorization (`security/`). It calls the coordinators (`kcoord.coordinator`) and never reaches back to
the composition root (`kcoord.wiring`) that builds it.
"""
