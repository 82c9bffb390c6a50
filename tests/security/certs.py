"""Test certificates made fresh per session with `cryptography` (EC P-256: milliseconds), never committed.

A CA, a server certificate for 127.0.0.1/localhost, and client certificates; each key and chain
written as one PEM file, as `--ssl-keystore-location` takes it.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from ipaddress import IPv4Address
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["Pki", "make_pki"]


@dataclass(frozen=True)
class Pki:
    ca: Path  # CA certificate (truststore for both sides)
    server: Path  # server key + certificate chain
    client: Path  # client key + certificate (CN=client,OU=eng,O=acme)
    client_cert: Path  # the client certificate alone (librdkafka wants them apart)
    client_key: Path
    other_ca: Path  # a second CA
    other_server: Path  # a server key + certificate signed by the second CA (reload tests)


def _name(**parts: str) -> x509.Name:
    oids = {"CN": NameOID.COMMON_NAME, "OU": NameOID.ORGANIZATIONAL_UNIT_NAME, "O": NameOID.ORGANIZATION_NAME}
    return x509.Name([x509.NameAttribute(oids[key], value) for key, value in reversed(parts.items())])


Key = ec.EllipticCurvePrivateKey


def _cert(
    subject: x509.Name, key: Key, issuer: x509.Name, issuer_key: Key,
    *, ca: bool = False, sans: list[x509.GeneralName] | None = None,
) -> x509.Certificate:  # fmt: skip
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def make_pki(out: Path, server_cn: str = "kcoord") -> Pki:
    out.mkdir(parents=True, exist_ok=True)
    ca_key, other_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name, other_name = _name(CN="kcoord test CA"), _name(CN="other CA")
    ca = _cert(ca_name, ca_key, ca_name, ca_key, ca=True)
    other = _cert(other_name, other_key, other_name, other_key, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.IPAddress(IPv4Address("127.0.0.1"))]
    server = _cert(_name(CN=server_cn), server_key, ca_name, ca_key, sans=sans)
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = _cert(_name(CN="client", OU="eng", O="acme"), client_key, ca_name, ca_key)
    other_server = _cert(_name(CN=server_cn), server_key, other_name, other_key, sans=sans)
    paths = Pki(
        out / "ca.pem", out / "server.pem", out / "client.pem", out / "client-cert.pem",
        out / "client-key.pem", out / "other-ca.pem", out / "other-server.pem",
    )  # fmt: skip
    paths.ca.write_bytes(_pem(ca))
    paths.other_ca.write_bytes(_pem(other))
    paths.server.write_bytes(_pem_key(server_key) + _pem(server) + _pem(ca))
    paths.client.write_bytes(_pem_key(client_key) + _pem(client))
    paths.other_server.write_bytes(_pem_key(server_key) + _pem(other_server) + _pem(other))
    paths.client_cert.write_bytes(_pem(client))
    paths.client_key.write_bytes(_pem_key(client_key))
    return paths
