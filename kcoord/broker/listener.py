"""What the connections of one listener share, built once from the configuration.

`ListenerSetup`: the listener's name (RequestMeta.listener_name), whether a client certificate names
the principal (SSL), the SASL setup (SASL_PLAINTEXT, SASL_SSL). `Security` builds them all, with one
TLS context per client-authentication mode (ssl.client.auth applies to SSL listeners only, KIP-684:
SASL_SSL listeners never ask for a certificate) and one SASL mechanism factory.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kcoord.broker.sasl_gate import SaslSetup
from kcoord.broker.security.listeners import Listener
from kcoord.broker.security.oauth import AccessTokenValidator, JwksKeys, OAuthBearerServer, TokenValidator
from kcoord.broker.security.oauth_unsecured import UNSECURED_WARNING, UnsecuredValidator
from kcoord.broker.security.sasl import MechanismServer, PlainServer, load_plain_users, parse_plain_users
from kcoord.broker.security.scram import CredentialLookup, ScramServer
from kcoord.broker.security.ssl_principal import SslPrincipalMapper
from kcoord.broker.security.tls import TlsFiles, TlsServer
from kcoord.coordinator.metadata.scram_credentials import ScramCredentials
from kcoord.wiring.config import Config

__all__ = ["PLAINTEXT_LISTENER", "ListenerSetup", "Security"]


@dataclass(frozen=True, slots=True)
class ListenerSetup:
    name: str  # the listener name requests carry in RequestMeta.listener_name
    security_protocol: str = "PLAINTEXT"
    # SSL listeners: the client certificate's mapped DN is the principal (SASL_SSL: SASL names it).
    principal_mapper: SslPrincipalMapper | None = None
    sasl: SaslSetup | None = None  # SASL_PLAINTEXT / SASL_SSL
    sasl_max_receive_size: int = 524_288  # sasl.server.max.receive.size: frames before authentication
    failed_authentication_delay_s: float = 0.1  # connection.failed.authentication.delay.ms


PLAINTEXT_LISTENER = ListenerSetup("PLAINTEXT")

log = logging.getLogger("kcoord.security")

# kafka-storage format --add-scram's default iterations (ScramMechanism.minIterations).
BOOTSTRAP_SCRAM_ITERATIONS = 4096
# How often the TLS key, certificate and CA files are checked for a change (a stat() each).
CERTIFICATE_CHECK_S = 5.0

# Builds one mechanism exchange; the SCRAM and OAUTHBEARER ones are added by whoever owns their state.
MechanismFactory = Callable[[], MechanismServer]


@dataclass
class Security:
    """The listeners' shared security state: TLS contexts (reloadable), SASL mechanisms, counts."""

    config: Config
    mechanisms: dict[str, MechanismFactory] = field(default_factory=dict)
    tls: dict[str, TlsServer] = field(default_factory=dict)  # client-auth mode (or "http") -> context
    # (mechanism, result) -> count, for /metrics
    authentications: Counter[tuple[str, str]] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        config = self.config
        if "PLAIN" in config.sasl_enabled_mechanisms:
            users = load_plain_users(config.sasl_plain_users, config.sasl_plain_users_file)
            self.mechanisms["PLAIN"] = lambda: PlainServer(users)

    def add_scram(self, lookup: CredentialLookup) -> None:
        """SCRAM-SHA-256/512 exchanges against the credential table (once it is recovered)."""
        for name in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            if name in self.config.sasl_enabled_mechanisms:
                self.mechanisms[name] = functools.partial(ScramServer, name, lookup)

    def add_oauthbearer(self, validator: AccessTokenValidator) -> None:
        if "OAUTHBEARER" in self.config.sasl_enabled_mechanisms:
            self.mechanisms["OAUTHBEARER"] = functools.partial(OAuthBearerServer, validator)

    def tls_server(self, listener: Listener) -> TlsServer | None:
        """The TLS context of an SSL or SASL_SSL listener (built on first use), else None."""
        if not listener.uses_tls:
            return None
        config = self.config
        assert config.ssl_keystore_location is not None, "checked by config_from_args"
        mode = config.ssl_client_auth if listener.security_protocol == "SSL" else "none"
        if mode not in self.tls:
            files = TlsFiles(
                config.ssl_keystore_location, config.ssl_key_password, config.ssl_truststore_location, mode
            )
            self.tls[mode] = TlsServer(files)
        return self.tls[mode]

    def http_tls(self) -> TlsServer | None:
        """The HTTP endpoint's TLS context (--http-ssl-keystore-location), reloaded with the others."""
        config = self.config
        if config.http_ssl_keystore_location is None:
            return None
        if "http" not in self.tls:
            self.tls["http"] = TlsServer(
                TlsFiles(config.http_ssl_keystore_location, config.http_ssl_key_password)
            )
        return self.tls["http"]

    def setup(self, listener: Listener) -> ListenerSetup:
        config = self.config
        mapper = None
        if listener.security_protocol == "SSL":
            mapper = SslPrincipalMapper(config.ssl_principal_mapping_rules)
        sasl = None
        if listener.uses_sasl:
            sasl = SaslSetup(
                mechanisms=config.sasl_enabled_mechanisms,
                new_server=self._new_server,
                connections_max_reauth_ms=config.connections_max_reauth_ms,
                counts=self.authentications,
            )
        return ListenerSetup(
            listener.name,
            listener.security_protocol,
            mapper,
            sasl,
            config.sasl_server_max_receive_size,
            config.connection_failed_authentication_delay_ms / 1000,
        )

    def _new_server(self, mechanism: str) -> MechanismServer:
        return self.mechanisms[mechanism]()

    # -- startup and upkeep (called by kcoord/wiring/app.py) ------------------------------------------
    async def start(
        self, loop: asyncio.AbstractEventLoop, credentials: ScramCredentials, stopped: Callable[[], bool]
    ) -> None:
        """After recovery, before the listeners open: the SCRAM table, the bootstrap users, the JWKS."""
        self.add_scram(credentials.lookup)
        await self.bootstrap_scram(credentials)
        await self._load_jwks(loop, stopped)
        self._add_unsecured_oauthbearer()

    def _add_unsecured_oauthbearer(self) -> None:
        """--sasl-oauthbearer-unsecured: Kafka's default validator, unsigned tokens (oauth_unsecured.py);
        config_from_args made sure OAUTHBEARER is served and no JWKS is configured."""
        config = self.config
        if not config.sasl_oauthbearer_unsecured:
            return
        log.warning(UNSECURED_WARNING)
        self.add_oauthbearer(
            UnsecuredValidator(
                config.sasl_oauthbearer_unsecured_validator_principal_claim_name,
                config.sasl_oauthbearer_unsecured_validator_scope_claim_name,
                config.sasl_oauthbearer_unsecured_validator_required_scope,
                config.sasl_oauthbearer_unsecured_validator_allowable_clock_skew_ms,
            )
        )

    async def bootstrap_scram(self, credentials: ScramCredentials) -> None:
        """--sasl-scram-bootstrap-users: durable before the listeners open (a failed write fails startup)."""
        if not self.config.sasl_scram_bootstrap_users:
            return
        users = parse_plain_users(self.config.sasl_scram_bootstrap_users)
        future: asyncio.Future[list[dict[str, Any]]] = asyncio.get_running_loop().create_future()
        credentials.bootstrap(users, BOOTSTRAP_SCRAM_ITERATIONS, future.set_result)
        results = await future
        for result in results:
            if isinstance(result["error"], BaseException):
                raise result["error"]
        log.info("SCRAM bootstrap: %d credentials created", len(results))

    async def _load_jwks(self, loop: asyncio.AbstractEventLoop, stopped: Callable[[], bool]) -> None:
        """OAUTHBEARER's verification keys: fetched in a worker thread before the listeners open, then
        refreshed every sasl.oauthbearer.jwks.endpoint.refresh.ms (also in a thread)."""
        config = self.config
        url = config.sasl_oauthbearer_jwks_endpoint_url
        uses_sasl = any(listener.uses_sasl for listener in config.resolved_listeners())
        if url is None or not uses_sasl or "OAUTHBEARER" not in config.sasl_enabled_mechanisms:
            return
        keys = JwksKeys(url, config.sasl_oauthbearer_jwks_endpoint_refresh_ms)
        await asyncio.to_thread(keys.refresh)
        self.add_oauthbearer(
            TokenValidator(
                keys,
                config.sasl_oauthbearer_expected_audience,
                config.sasl_oauthbearer_expected_issuer,
                config.sasl_oauthbearer_sub_claim_name,
                config.sasl_oauthbearer_clock_skew_seconds,
                config.sasl_oauthbearer_scope_claim_name,
            )
        )

        def refresh() -> None:
            if not stopped():
                loop.run_in_executor(None, keys.refresh)
                loop.call_later(keys.refresh_s, refresh)

        loop.call_later(keys.refresh_s, refresh)

    def watch_certificates(self, loop: asyncio.AbstractEventLoop) -> None:
        """Reload TLS files when they change (a stat() every CERTIFICATE_CHECK_S); SIGHUP reloads at once."""
        if not self.tls:
            return

        def check() -> None:
            self.reload_tls_if_changed()
            loop.call_later(CERTIFICATE_CHECK_S, check)

        loop.call_later(CERTIFICATE_CHECK_S, check)

    def reload_tls(self) -> None:
        for server in self.tls.values():
            server.reload()

    def reload_tls_if_changed(self) -> None:
        for server in self.tls.values():
            server.reload_if_changed()
