"""A real SMTP server on loopback for the mail tests: aiosmtpd's threaded Controller."""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any


@dataclass
class Delivered:
    sender: str
    recipients: list[str]
    message: EmailMessage


@dataclass
class Inbox:
    """What the server received, in order; `wait(n)` blocks until n mails arrived."""

    mails: list[Delivered] = field(default_factory=list)
    arrived: threading.Condition = field(default_factory=threading.Condition)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        parsed = message_from_bytes(envelope.content, policy=policy.default)
        assert isinstance(parsed, EmailMessage)
        with self.arrived:
            self.mails.append(Delivered(envelope.mail_from, list(envelope.rcpt_tos), parsed))
            self.arrived.notify_all()
        return "250 OK"

    def wait(self, count: int, timeout: float = 10.0) -> list[Delivered]:
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.mails) >= count, timeout), (
                f"{len(self.mails)} mail(s) arrived, {count} expected"
            )
            return list(self.mails)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class SmtpServer:
    def __init__(self) -> None:
        from aiosmtpd.controller import Controller

        self.inbox = Inbox()
        self.port = free_port()
        self.controller = Controller(self.inbox, hostname="127.0.0.1", port=self.port)

    def start(self) -> SmtpServer:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()

    def settings(self, **overrides: Any) -> dict[str, Any]:
        """The SMTP_* settings that send here (no TLS on loopback)."""
        return {
            "SMTP_HOST": "127.0.0.1",
            "SMTP_PORT": self.port,
            "SMTP_FROM": "chat@example.com",
            "SMTP_TO": "owner@example.com",
            "SMTP_STARTTLS": False,
            **overrides,
        }
