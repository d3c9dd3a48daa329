"""Where a webhook may go (widget_server/webhooks/addresses.py; docs/security.md, "Webhooks"):
every address a host resolves to is checked, loopback, private, link-local, reserved,
multicast, unspecified and IPv4-mapped IPv6 ones refused without WEBHOOK_ALLOW_PRIVATE, and the
connection goes to the checked address, so a changed DNS answer cannot redirect it."""

from __future__ import annotations

import ipaddress
import ssl

import pytest

from widget_server.webhooks.addresses import RefusedAddress, Target, connection, refusal, resolve

from .webhook_support import Receiver


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fd00::1", "private"),
        ("169.254.169.254", "link-local"),  # the cloud metadata service
        ("fe80::1", "link-local"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("100.64.0.1", "not global"),  # shared address space (RFC 6598)
        ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped IPv6, judged as its IPv4 address
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:169.254.169.254", "link-local"),
    ],
)
def test_non_public_addresses_are_refused(address, why):
    assert refusal(ipaddress.ip_address(address)) == why


@pytest.mark.parametrize("address", ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_pass(address):
    assert refusal(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/hook",
        "http://10.0.0.7:8080/hook",
        "http://[::1]/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:127.0.0.1]/hook",
        "http://localhost/hook",  # a name: its addresses are what is checked
        "https://localhost:8443/hook",
    ],
)
def test_a_url_reaching_this_machine_or_a_private_network_is_refused(url):
    with pytest.raises(RefusedAddress, match="WEBHOOK_ALLOW_PRIVATE"):
        resolve(url, allow_private=False)


def test_with_allow_private_the_url_resolves_to_its_address():
    target = resolve("http://localhost:8123/hooks?x=1", allow_private=True)
    assert (target.scheme, target.host, target.port, target.path) == ("http", "localhost", 8123, "/hooks?x=1")
    assert ipaddress.ip_address(target.address).is_loopback


def test_an_unresolvable_host_is_a_connection_error_not_a_refusal():
    with pytest.raises(OSError) as raised:
        resolve("http://no-such-host.invalid/hook", allow_private=False)
    assert not isinstance(raised.value, RefusedAddress)


def test_the_connection_goes_to_the_checked_address_with_the_name_in_host():
    # A name that resolves nowhere: were it looked up again at connect time (a DNS rebinding
    # window), the request would fail; it reaches the address that was checked.
    receiver = Receiver().start()
    try:
        target = Target("http", "hooks.rebinding.invalid", receiver.port, "/hooks/chat", "127.0.0.1")
        connected = connection(target, timeout=10)
        connected.request("POST", target.path, body=b"{}", headers={"Content-Type": "application/json"})
        assert connected.getresponse().status == 200
        connected.close()
        got = receiver.wait_for(lambda items: len(items) == 1)
        assert got[0].headers["host"] == f"hooks.rebinding.invalid:{receiver.port}"
    finally:
        receiver.stop()


def self_signed(tmp_path, name: str) -> tuple[str, str]:
    """A certificate for `name` and its key, as PEM files (the test's own authority)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_path), str(key_path)


@pytest.mark.parametrize(("certificate_for", "accepted"), [("hooks.example.test", True), ("other.example.test", False)])
def test_https_checks_the_certificate_against_the_name_not_the_address(tmp_path, certificate_for, accepted):
    cert, key = self_signed(tmp_path, certificate_for)
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)
    receiver = Receiver(tls=server_tls).start()
    client_tls = ssl.create_default_context(cafile=cert)
    try:
        target = Target("https", "hooks.example.test", receiver.port, "/hooks/chat", "127.0.0.1")
        connected = connection(target, timeout=10, tls=client_tls)
        if accepted:
            connected.request("POST", target.path, body=b"{}", headers={"Content-Type": "application/json"})
            assert connected.getresponse().status == 200
            assert receiver.wait_for(lambda items: len(items) == 1)[0].headers["host"].startswith("hooks.example.test")
        else:
            # The address answered, with a certificate for another name: refused by TLS itself.
            with pytest.raises(ssl.SSLCertVerificationError):
                connected.request("POST", target.path, body=b"{}")
        connected.close()
    finally:
        receiver.stop()
