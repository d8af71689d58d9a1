"""How Cohort reaches its upstream: the bootstrap addresses and the client-side settings
(``security.protocol``, ``sasl.*``, ``ssl.*``), checked when Cohort starts, not at the first
relayed request.

The keys are librdkafka's and the Java client's names, so a user copies them from the
configuration their applications already use.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
KNOWN_KEYS = frozenset({
    "security.protocol", "sasl.mechanism", "sasl.mechanisms", "sasl.username",
    "sasl.password", "ssl.ca.location", "ssl.certificate.location", "ssl.key.location",
    "ssl.key.password", "ssl.endpoint.identification.algorithm", "client.id",
    "metadata.poll.interval.ms",
})
DEFAULT_POLL_INTERVAL_MS = 5_000


class UpstreamConfigError(ValueError):
    """A setting Cohort cannot reach its upstream with; the message names the setting."""


@dataclass(frozen=True)
class UpstreamSettings:
    """The upstream's bootstrap addresses (``host:port`` each) and how to reach them."""

    bootstrap: tuple[tuple[str, int], ...]
    config: tuple[tuple[str, str], ...] = field(default=())

    @classmethod
    def parse(cls, upstream: str, config: dict[str, object] | None = None) -> UpstreamSettings:
        """``upstream``: ``host:port[,host:port...]``; ``config``: the client settings."""
        addresses = []
        for part in (upstream or "").split(","):
            part = part.strip()
            host, sep, port = part.rpartition(":")
            if not part or not sep or not host or not port.isdigit() or \
                    not 0 < int(port) < 65536:
                raise UpstreamConfigError(
                    f"upstream address {part!r} is not host:port (--upstream / upstream=)")
            addresses.append((host.strip("[]"), int(port)))
        conf = {str(k): str(v) for k, v in (config or {}).items()}
        unknown = sorted(set(conf) - KNOWN_KEYS)
        if unknown:
            raise UpstreamConfigError(
                f"unknown upstream setting(s) {unknown} (--upstream-config); known: "
                f"{sorted(KNOWN_KEYS)}")
        settings = cls(tuple(addresses), tuple(sorted(conf.items())))
        settings._check()
        return settings

    def get(self, key: str, default: str | None = None) -> str | None:
        return dict(self.config).get(key, default)

    @property
    def security_protocol(self) -> str:
        return (self.get("security.protocol") or "PLAINTEXT").upper()

    @property
    def sasl_mechanism(self) -> str | None:
        if not self.security_protocol.startswith("SASL_"):
            return None
        return (self.get("sasl.mechanism") or self.get("sasl.mechanisms") or "PLAIN").upper()

    @property
    def poll_interval_s(self) -> float:
        return int(self.get("metadata.poll.interval.ms") or DEFAULT_POLL_INTERVAL_MS) / 1000

    @property
    def text(self) -> str:
        """The bootstrap list as the user wrote it."""
        return ",".join(f"{h}:{p}" for h, p in self.bootstrap)

    def _check(self) -> None:
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise UpstreamConfigError(
                f"security.protocol={self.get('security.protocol')!r} is not one of "
                f"{list(SECURITY_PROTOCOLS)} (--upstream-config security.protocol=...)")
        mech = self.sasl_mechanism
        if mech is not None:
            if mech not in SASL_MECHANISMS:
                raise UpstreamConfigError(
                    f"sasl.mechanism={mech!r} is not one of {list(SASL_MECHANISMS)}")
            if self.get("sasl.username") is None or self.get("sasl.password") is None:
                raise UpstreamConfigError(
                    f"security.protocol={self.security_protocol} needs sasl.username and "
                    "sasl.password (--upstream-config sasl.username=... sasl.password=...)")
        interval = self.get("metadata.poll.interval.ms")
        if interval is not None and (not interval.isdigit() or int(interval) < 100):
            raise UpstreamConfigError(
                f"metadata.poll.interval.ms={interval!r} must be a whole number >= 100")

    def tls_context(self, server_host: str) -> ssl.SSLContext | None:
        """The TLS context for ``security.protocol`` SSL / SASL_SSL, else None."""
        if not self.security_protocol.endswith("SSL"):
            return None
        ctx = ssl.create_default_context(cafile=self.get("ssl.ca.location"))
        if (self.get("ssl.endpoint.identification.algorithm") or "https").lower() == "none":
            ctx.check_hostname = False
        cert = self.get("ssl.certificate.location")
        if cert:
            ctx.load_cert_chain(cert, self.get("ssl.key.location"),
                                self.get("ssl.key.password"))
        return ctx

    def redacted(self) -> dict[str, str]:
        """The settings with the password hidden (for ``cohort status``, logs)."""
        return {k: ("******" if "password" in k else v) for k, v in self.config}
