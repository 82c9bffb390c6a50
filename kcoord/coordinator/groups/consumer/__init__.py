"""The consumer protocol of KIP-848 (issue 14): so far its server-side assignors."""
