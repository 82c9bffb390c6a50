"""Share groups (KIP-932): the group side, Kafka's GroupMetadataManager for share groups."""
