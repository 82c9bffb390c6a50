"""Who a connection is (Kafka's KafkaPrincipal): `User:alice`, `User:CN=client,O=acme`.

PLAINTEXT connections are `User:ANONYMOUS` (DefaultKafkaPrincipalBuilder), SSL ones the certificate's
DN after `ssl.principal.mapping.rules` (ANONYMOUS without a certificate), SASL ones `User:` + the
authenticated (authorization) id.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ANONYMOUS", "KafkaPrincipal"]


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """`User:alice` (SecurityUtils.parseKafkaPrincipal); ValueError without a type."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type or not name:
            raise ValueError(f"expected a principal as Type:name, got {text!r}")
        return cls(principal_type, name)


ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")
