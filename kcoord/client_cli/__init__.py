"""The `kcoord` client commands (groups, transactions, acls, users, dev certs).

They talk to a broker over the Kafka protocol, like any other client.

They import `kcoord.protocol` and nothing of the server (an import-linter contract), so they work the same
against kcoord and against a real Kafka cluster.
"""
