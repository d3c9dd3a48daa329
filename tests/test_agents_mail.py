"""Email over SMTP (widget_server/agents/mail.py), delivered to a real SMTP server on loopback
(aiosmtpd, tests/smtp_support.py): a left message to the site owner, a reply to the visitor."""

from __future__ import annotations

import pytest

from widget_server.agents.mail import Mail, Mailer
from widget_server.metrics import NO_METRICS, Metrics
from widget_server.settings import load_settings

from .smtp_support import free_port

BASE = {
    "SMTP_HOST": "",
    "SMTP_PORT": 25,
    "SMTP_FROM": "",
    "SMTP_TO": "",
    "SMTP_USERNAME": "",
    "SMTP_PASSWORD": "",
    "SMTP_STARTTLS": False,
    "SMTP_TIMEOUT_SECONDS": 5.0,
    "PUBLIC_URL": "https://chat.example.com",
}


def mailer_from(values: dict, metrics: Metrics = NO_METRICS) -> Mailer:
    """A Mailer as the app builds it: the SMTP_* settings, the console's link on PUBLIC_URL."""
    settings = load_settings(values, environ={})
    return Mailer(settings.mail, metrics, settings.web.public_url + "/agent")


def text_of(delivered) -> str:
    """The body as sent: SMTP carries lines ending in CRLF (RFC 5321 §2.3.8)."""
    return delivered.message.get_content().replace("\r\n", "\n")


@pytest.fixture
def mailer(smtp):
    smtp.inbox.mails.clear()
    sender = mailer_from({**BASE, **smtp.settings()})
    yield sender
    sender.close()


def test_a_left_message_reaches_the_owner_with_the_visitors_address_to_reply_to(smtp, mailer):
    assert mailer.left_message(
        conversation_id="c_abc",
        email="visitor@example.org",
        text="Where is my order?\nIt is late.",
        created_at="2026-11-30T18:00:00Z",
    )
    (mail,) = smtp.inbox.wait(1)
    assert mail.sender == "chat@example.com"
    assert mail.recipients == ["owner@example.com"]
    message = mail.message
    assert message["From"] == "chat@example.com"
    assert message["To"] == "owner@example.com"
    assert message["Reply-To"] == "visitor@example.org"
    assert message["Subject"] == "New message left in the chat"
    assert message["Auto-Submitted"] == "auto-generated"
    assert message["Message-ID"].endswith("@example.com>")
    body = text_of(mail)
    assert "Where is my order?\nIt is late." in body
    assert "Their email address: visitor@example.org" in body
    assert "Conversation: c_abc" in body
    assert "at 2026-11-30T18:00:00Z" in body
    assert "https://chat.example.com/agent" in body
    mailer.flush(5)  # the counter moves once the SMTP session ends
    assert mailer.sent == 1 and mailer.failed == 0


def test_a_left_message_without_an_address_has_no_reply_to(smtp, mailer):
    assert mailer.left_message(conversation_id="c_abc", email=None, text="Call me back")
    (mail,) = smtp.inbox.wait(1)
    assert mail.message["Reply-To"] is None
    assert "Their email address: none given" in text_of(mail)


def test_a_reply_reaches_the_visitor_with_their_message_quoted_in_utf8(smtp, mailer):
    assert mailer.left_reply(
        email="visitor@example.org", agent="Zoë", text="Llega mañana — ¡perdón!", original="Where is it?\nOrder 12"
    )
    (mail,) = smtp.inbox.wait(1)
    message = mail.message
    assert mail.recipients == ["visitor@example.org"]
    assert message["To"] == "visitor@example.org"
    assert message["Subject"] == "Zoë replied to your message"
    assert message["Reply-To"] == "owner@example.com"
    assert message.get_content_charset() == "utf-8"
    body = text_of(mail)
    assert body.startswith("Zoë replied to the message you left in the chat:\n\nLlega mañana — ¡perdón!\n")
    assert "Your message:\n> Where is it?\n> Order 12\n" in body


def test_no_address_no_reply_mail(smtp, mailer):
    assert mailer.left_reply(email=None, agent="Zoë", text="hello", original="hi") is False
    assert mailer.left_reply(email="", agent="Zoë", text="hello", original="hi") is False
    mailer.flush(5)
    assert smtp.inbox.mails == []


def test_mail_is_off_without_host_or_sender(smtp):
    quiet = mailer_from({**BASE, "SMTP_TO": "owner@example.com"})
    assert not quiet.enabled
    assert quiet.left_message(conversation_id="c_1", email=None, text="x") is False
    assert quiet.submit(Mail("owner@example.com", "s", "b")) is False


def test_an_unreachable_server_is_logged_and_counted_never_raised(caplog):
    closed_port = free_port()  # nothing listens there
    metrics = Metrics(enabled=True)
    settings = {**BASE, "SMTP_HOST": "127.0.0.1", "SMTP_PORT": closed_port, "SMTP_FROM": "chat@example.com"}
    mailer = mailer_from(settings, metrics)
    assert mailer.left_message(conversation_id="c_1", email=None, text="x") is False  # no SMTP_TO: nothing to do
    assert mailer.send_now(Mail("owner@example.com", "Subject", "Body")) is False
    assert mailer.failed == 1 and mailer.sent == 0
    assert "mail to owner@example.com not sent" in caplog.text
    assert metrics.registry.get_sample_value("chat_mails_total", {"outcome": "failed"}) == 1
    assert metrics.registry.get_sample_value("chat_mails_total", {"outcome": "sent"}) == 0


def test_a_line_break_in_an_address_never_becomes_a_header(smtp, mailer):
    assert mailer.send_now(Mail("visitor@example.org\r\nBcc: victim@example.net", "Subject", "Body")) is False
    assert mailer.failed == 1
    mailer.flush(5)
    assert smtp.inbox.mails == []


def test_starttls_refused_by_a_plain_server_fails_cleanly(smtp):
    mailer = mailer_from({**BASE, **smtp.settings(SMTP_STARTTLS=True)})
    assert mailer.send_now(Mail("owner@example.com", "Subject", "Body")) is False
    assert mailer.failed == 1
