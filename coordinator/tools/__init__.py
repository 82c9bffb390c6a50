"""Command-line tools that talk to a broker over the Kafka protocol, like any other client.

They import `protocol/` and nothing of the server (an import-linter contract), so they work the same
against kcoord and against a real Kafka cluster.
"""
