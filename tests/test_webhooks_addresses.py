"""Where a webhook may go (widget_server/webhooks/addresses.py; docs/security.md, "Webhooks"):
every address a host resolves to is checked, loopback, private, link-local, reserved,
multicast, unspecified and IPv4-mapped IPv6 ones refused without WEBHOOK_ALLOW_PRIVATE, and the
connection goes to the checked address, so a changed DNS answer cannot redirect it."""

from __future__ import annotations

import ipaddress

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
