"""TLS for the Kafka listeners and the HTTP endpoint: the standard library's `ssl`, PEM files only.

`ssl.keystore.type=PEM`: one file with the private key and the certificate chain; the truststore is a
PEM CA bundle. TLS 1.2 and 1.3 (Kafka's ssl.enabled.protocols). Client authentication as
`ssl.client.auth`: none, requested (a certificate is verified if sent) or required.

Reload without a restart: the listening sockets keep one context whose SNI callback hands each new
handshake the current context; `reload()` builds a fresh one from the files (keeping the old one if
the files are broken), so certificates and CAs change for new connections and open ones keep theirs.
OpenSSL calls the callback on every ClientHello, with or without a server name.
"""

from __future__ import annotations

import logging
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

from kcoord.broker.security.principal import ANONYMOUS, KafkaPrincipal
from kcoord.broker.security.ssl_principal import SslPrincipalMapper, subject_dn

__all__ = ["TlsFiles", "TlsServer", "ssl_principal"]

log = logging.getLogger("kcoord.tls")

_VERIFY = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


@dataclass(frozen=True, slots=True)
class TlsFiles:
    keystore: Path  # PEM: private key and certificate chain
    key_password: str | None = None
    truststore: Path | None = None  # PEM CA bundle
    client_auth: str = "none"  # none | requested | required


def _build(files: TlsFiles) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(files.keystore, password=files.key_password)
    if files.truststore is not None:
        context.load_verify_locations(cafile=files.truststore)
    context.verify_mode = _VERIFY[files.client_auth]
    return context


class TlsServer:
    """The context a listener serves with, and its reload."""

    def __init__(self, files: TlsFiles) -> None:
        self.files = files
        self.current = _build(files)  # raises on unreadable files: startup fails with the reason
        self.context = _build(files)  # what the sockets hold; only its SNI callback matters after this
        self.context.sni_callback = self._pick
        self._stamp = self._mtimes()
        self.reloads = 0

    def _pick(self, sslobj: ssl.SSLObject, server_name: str | None, _: ssl.SSLContext) -> None:
        sslobj.context = self.current
        return None

    def _mtimes(self) -> tuple[float, ...]:
        paths = (self.files.keystore, self.files.truststore)
        return tuple(os.stat(path).st_mtime_ns if path is not None else 0 for path in paths)

    def reload(self) -> bool:
        """Rebuild from the files (SIGHUP); False and the old context kept if they do not load."""
        try:
            fresh = _build(self.files)
            self._stamp = self._mtimes()
        except (OSError, ssl.SSLError, ValueError) as exc:
            log.error("TLS reload failed, keeping the previous certificates: %s", exc)
            return False
        self.current = fresh
        self.reloads += 1
        log.info("TLS certificates reloaded from %s", self.files.keystore)
        return True

    def reload_if_changed(self) -> bool:
        """The file-change check a periodic timer runs: reload when a file's mtime moved."""
        try:
            changed = self._mtimes() != self._stamp
        except OSError:
            return False
        return changed and self.reload()


def ssl_principal(ssl_object: ssl.SSLObject | None, mapper: SslPrincipalMapper) -> KafkaPrincipal:
    """DefaultKafkaPrincipalBuilder for SSL: no certificate is ANONYMOUS, else the mapped DN (a DN no
    rule names raises NoMatchingRule: the connection is closed)."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return ANONYMOUS
    return KafkaPrincipal("User", mapper.name(subject_dn(der)))
