"""The transaction coordinator (Kafka's TransactionCoordinator), pure: a tenant of coordinator.runtime."""
