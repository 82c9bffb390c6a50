"""The edge's half of topics: their configs (`configs`), the data plane glue to the partition logs
(`data`) and partition leadership (`leadership`). Which topics exist is the coordinator's
(`kcoord.coordinator.metadata`, the topic registry)."""
