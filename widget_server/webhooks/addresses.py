"""Where a webhook may be sent (docs/security.md, "Webhooks"): never to this machine or a
private network unless WEBHOOK_ALLOW_PRIVATE says so, whatever a URL's host name resolves to.

The host is resolved once per attempt, every address it resolves to is checked (one bad
address refuses the URL: a name that resolves to a public and a private address could be
answered either way by the next lookup), and the connection is made to the checked address
itself, with the name only in the Host header and TLS's SNI and certificate check: a DNS
answer that changes between the check and the connection (DNS rebinding) cannot swap it.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class RefusedAddress(Exception):
    """The URL's host is, or resolves to, an address webhooks are not sent to."""


def refusal(address: Address) -> str | None:
    """Why `address` is not a public one (None: it is). An IPv4-mapped IPv6 address
    (::ffff:127.0.0.1) is judged as the IPv4 address it carries."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return refusal(address.ipv4_mapped)
    # Most telling first: ipaddress counts 169.254.0.0/16 and 0.0.0.0 as private too.
    for name in ("loopback", "link_local", "multicast", "unspecified", "reserved", "private"):
        if getattr(address, f"is_{name}"):
            return name.replace("_", "-")
    if not address.is_global:
        return "not global"  # 100.64.0.0/10 (shared address space) and the like
    return None


@dataclass(frozen=True)
class Target:
    """A webhook URL taken apart, with the address it is sent to."""

    scheme: str
    host: str
    port: int
    path: str
    address: str


def resolve(url: str, *, allow_private: bool) -> Target:
    """The URL's target, its host resolved and every address checked (RefusedAddress)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise OSError(f"{host}: not resolved: {error}") from error
    addresses = list(dict.fromkeys(str(info[4][0]).split("%", 1)[0] for info in found))
    if not addresses:
        raise OSError(f"{host}: no address")
    if not allow_private:
        for text in addresses:
            why = refusal(ipaddress.ip_address(text))
            if why is not None:
                raise RefusedAddress(f"{host} resolves to {text} ({why}); set WEBHOOK_ALLOW_PRIVATE to allow it")
    return Target(parts.scheme, host, port, path, addresses[0])


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """http.client's, connecting to the checked address instead of resolving the host again."""

    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = target.address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _PinnedHTTPSConnection(_PinnedHTTPConnection):
    def __init__(self, target: Target, timeout: float, context: ssl.SSLContext) -> None:
        super().__init__(target, timeout)
        self._context = context

    def connect(self) -> None:
        super().connect()
        # The name, not the address, is what the certificate must be for (and the SNI).
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self.host)


_TLS = ssl.create_default_context()


def connection(target: Target, timeout: float, tls: ssl.SSLContext = _TLS) -> http.client.HTTPConnection:
    """An HTTP(S) connection to the target's checked address (not yet connected). `tls`: the
    system's trusted certificates and hostname checking; a test gives its own authority."""
    if target.scheme == "https":
        return _PinnedHTTPSConnection(target, timeout, tls)
    return _PinnedHTTPConnection(target, timeout)
