"""`kcoord dev certs --out DIR [--hostname NAME ...]`: a throwaway CA, a server certificate and a client
certificate as PEM files, for tests and local TLS (never for production: the CA key sits beside them).

Files written (mode 0600 for the keys):
  ca.pem                                 the CA certificate: the trust store of servers and clients
                                         (--ssl-truststore-location, ssl.truststore.location, ssl_cafile)
  ca-key.pem                             the CA's private key
  server.pem                             the server's key and certificate chain in one file, as Kafka's
                                         ssl.keystore.type=PEM keystore (--ssl-keystore-location)
  server-cert.pem, server-key.pem        the same, split (librdkafka's and kafka-python's settings)
  client.pem, client-cert.pem, client-key.pem   the client's, for mutual TLS (ssl.keystore.location)

The server certificate names every --hostname (default localhost) and 127.0.0.1 and ::1 as subject
alternative names, so clients that check the host name (Kafka's ssl.endpoint.identification.algorithm=
https, librdkafka's default) accept it. The client certificate's subject is CN=<--client-cn>, so an mTLS
client's principal is User:CN=<--client-cn> (Kafka's default ssl.principal.mapping.rules). Keys are ECDSA
P-256 (quick to make; every Kafka client accepts them).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kcoord.client_cli.output import ToolParser

__all__ = ["main", "make_certs"]

PROG = "kcoord dev certs"
VALID_DAYS = 825
Key = ec.EllipticCurvePrivateKey


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(subject: x509.Name, issuer: x509.Name, key: Key) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
    )


def _ca(common_name: str) -> tuple[Key, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(_name(common_name), _name(common_name), key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _leaf(
    ca_key: Key, ca_cert: x509.Certificate, common_name: str, usage: x509.ObjectIdentifier, names: list[str]
) -> tuple[Key, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        _builder(_name(common_name), ca_cert.subject, key)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(_general_names(names)), critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def _general_names(names: list[str]) -> list[x509.GeneralName]:
    result: list[x509.GeneralName] = []
    for name in dict.fromkeys(names):
        try:
            result.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            result.append(x509.DNSName(name))
    return result


def _key_pem(key: Key, password: str | None) -> bytes:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption()
    )
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _write(path: Path, data: bytes, secret: bool) -> None:
    path.write_bytes(data)
    if secret:
        os.chmod(path, 0o600)


def make_certs(
    out: Path, hostnames: Sequence[str], client_cn: str = "kcoord-client", key_password: str | None = None
) -> dict[str, Path]:
    """Write the CA, server and client files into `out` (created if needed); name -> path.
    `key_password` encrypts the client's key (Kafka's ssl.key.password)."""
    out.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _ca("kcoord dev CA")
    server_names = [*hostnames, "127.0.0.1", "::1"]
    server_key, server_cert = _leaf(
        ca_key, ca_cert, hostnames[0], ExtendedKeyUsageOID.SERVER_AUTH, server_names
    )
    client_key, client_cert = _leaf(ca_key, ca_cert, client_cn, ExtendedKeyUsageOID.CLIENT_AUTH, [])
    chain = _cert_pem(ca_cert)
    files = {
        "ca.pem": (chain, False),
        "ca-key.pem": (_key_pem(ca_key, None), True),
        "server.pem": (_key_pem(server_key, None) + _cert_pem(server_cert) + chain, True),
        "server-cert.pem": (_cert_pem(server_cert) + chain, False),
        "server-key.pem": (_key_pem(server_key, None), True),
        "client.pem": (_key_pem(client_key, key_password) + _cert_pem(client_cert) + chain, True),
        "client-cert.pem": (_cert_pem(client_cert) + chain, False),
        "client-key.pem": (_key_pem(client_key, key_password), True),
    }
    for name, (data, secret) in files.items():
        _write(out / name, data, secret)
    return {name: out / name for name in files}


def main(argv: Sequence[str] | None = None) -> int:
    p = ToolParser(prog=PROG, description="Make a test CA, a server and a client certificate (PEM files).")
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="where to write the files")
    p.add_argument(
        "--hostname",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name (or IP) the server certificate names (repeatable; default localhost; "
        "127.0.0.1 and ::1 are always included)",
    )
    p.add_argument("--client-cn", default="kcoord-client", metavar="CN", help="default kcoord-client")
    p.add_argument("--client-key-password", metavar="PASSWORD", help="encrypt the client's key with it")
    args = p.parse_args(argv)
    files = make_certs(args.out, args.hostname or ["localhost"], args.client_cn, args.client_key_password)
    for path in files.values():
        print(path)
    return 0
