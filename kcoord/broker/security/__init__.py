"""Security (issue 25): listeners and TLS, SASL authentication, principals, and the authorizer."""

from kcoord.broker.security.principal import ANONYMOUS, KafkaPrincipal

__all__ = ["ANONYMOUS", "KafkaPrincipal"]
