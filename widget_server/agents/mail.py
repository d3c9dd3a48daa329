"""Email over SMTP: a left message to the site owner, an agent's reply to the visitor
(docs/agents.md, "Email"; settings SMTP_* in
docs/configuration.md).

Mail is sent by one background thread per process, from a bounded queue, so a request never
waits for an SMTP server: leaving a message or replying to one answers at once, whatever the
mail server does. Each connection has a timeout (SMTP_TIMEOUT_SECONDS); a failure is logged
and counted (`Mailer.failed`) and never reaches the visitor or the agent as an error: the
message is in the console's inbox either way. A full queue (a mail server down for long)
drops the newest mail, logged and counted, rather than holding memory without bound.

Messages are built with the standard library's `email.message.EmailMessage`, whose default
policy refuses a header value with a line break, so text from a visitor can never add a
header (header injection); bodies are plain text, UTF-8.
"""

from __future__ import annotations

import logging
import queue
import smtplib
import ssl
import threading
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

from ..handoff.store import LeftMessageRecord, LeftReply
from ..metrics import NO_METRICS, Metrics
from ..settings.areas import MailSettings

log = logging.getLogger(__name__)

QUEUE_SIZE = 100


@dataclass(frozen=True)
class Mail:
    to: str
    subject: str
    body: str
    reply_to: str | None = None


class Mailer:
    """Sends mail with the SMTP_* settings; `enabled` only when SMTP_HOST, SMTP_FROM are set."""

    def __init__(self, settings: MailSettings, metrics: Metrics = NO_METRICS, console_url: str = "/agent") -> None:
        self.host: str = settings.host
        self.port: int = settings.port
        self.sender: str = settings.sender
        self.owner: str = settings.owner
        self.username: str = settings.username
        self.password: str = settings.password
        self.starttls: bool = settings.starttls
        self.timeout: float = settings.timeout_seconds
        # The console's address, for links in mail: PUBLIC_URL and the path a host app mounts
        # the chat at (mount.py), which the caller knows.
        self.console_url = console_url
        self.sent = 0
        self.failed = 0
        self._counter: Any = None
        if metrics.enabled:
            from prometheus_client import Counter

            # docs/serving.md, "Metrics": a mail server that refuses or is down shows here.
            self._counter = Counter(
                "chat_mails",
                "Mail the server tried to send (a left message, a reply to one), by outcome: sent, failed, dropped.",
                ["outcome"],
                registry=metrics.registry,
            )
            for outcome in ("sent", "failed", "dropped"):
                self._counter.labels(outcome=outcome)
        self._queue: queue.Queue[Mail | None] = queue.Queue(maxsize=QUEUE_SIZE)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return bool(self.host and self.sender)

    # -- what is sent ----------------------------------------------------------------------

    def left_message(self, *, conversation_id: str, email: str | None, text: str, created_at: str = "") -> bool:
        """A visitor left a message while nobody was available: tell the site owner (SMTP_TO).
        Reply-To is the visitor's address when they gave one, so the owner may answer by mail."""
        if not self.owner:
            return False
        when = f" at {created_at}" if created_at else ""
        body = (
            f"A visitor left a message in the chat{when}, while no agent was available.\n\n"
            f"Their email address: {email or 'none given'}\n"
            f"Conversation: {conversation_id}\n\n"
            f"{text}\n\n"
            f"Reply in the agent console's inbox: {self.console_url}\n"
        )
        return self.submit(Mail(self.owner, "New message left in the chat", body, reply_to=email or None))

    def left_reply(self, *, email: str | None, agent: str, text: str, original: str) -> bool:
        """An agent replied in the console to a left message: mail it to the visitor, if they gave
        an address (the reply is also shown in the widget if they come back)."""
        if not email:
            return False
        quoted = "\n".join(f"> {line}" for line in original.splitlines()) or ">"
        body = (
            f"{agent} replied to the message you left in the chat:\n\n"
            f"{text}\n\n"
            f"Your message:\n{quoted}\n\n"
            "Open the chat on the site again to see this reply there too.\n"
        )
        return self.submit(Mail(email, f"{agent} replied to your message", body, reply_to=self.owner or None))

    # The hand-off service's hooks (HandoffService `on_left_message`, `on_left_reply`): its
    # inbox entries as they are stored (handoff/service.py).

    def mail_left_message(self, entry: LeftMessageRecord) -> None:
        self.left_message(
            conversation_id=entry["conversation_id"],
            email=entry.get("email"),
            text=entry["text"],
            created_at=entry.get("created_at", ""),
        )

    def mail_left_reply(self, entry: LeftMessageRecord, reply: LeftReply) -> None:
        self.left_reply(email=entry.get("email"), agent=reply["agent"], text=reply["text"], original=entry["text"])

    # -- sending ---------------------------------------------------------------------------

    def submit(self, mail: Mail) -> bool:
        """Queue `mail` for the sending thread; False (logged) when mail is off or the queue is full."""
        if not self.enabled:
            return False
        self._start()
        try:
            self._queue.put_nowait(mail)
        except queue.Full:
            self._count("dropped")
            log.error("mail to %s dropped: %d mails already wait for the SMTP server", mail.to, QUEUE_SIZE)
            return False
        return True

    def _start(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="widget-server-mail", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            mail = self._queue.get()
            try:
                if mail is None:
                    return
                self.send_now(mail)
            finally:
                self._queue.task_done()

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every queued mail was tried (tests, and a stopping worker)."""
        if timeout is None:
            self._queue.join()
            return
        done = threading.Event()

        def wait() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=wait, daemon=True).start()
        done.wait(timeout)

    def close(self) -> None:
        with self._lock:
            thread = self._thread
        if thread is not None and thread.is_alive():
            self._queue.put(None)
            thread.join(self.timeout + 1)

    def build(self, mail: Mail) -> EmailMessage:
        message = EmailMessage()
        message["From"] = self.sender
        message["To"] = mail.to
        message["Subject"] = mail.subject
        if mail.reply_to:
            message["Reply-To"] = mail.reply_to
        message["Date"] = formatdate(localtime=False, usegmt=True)
        message["Message-ID"] = make_msgid(domain=self.sender.rpartition("@")[2] or None)
        message["Auto-Submitted"] = "auto-generated"  # RFC 3834 §5: no auto-replies to this
        message.set_content(mail.body, charset="utf-8")
        return message

    def send_now(self, mail: Mail) -> bool:
        """Send one mail, in this thread; False (logged, counted) on any failure."""
        try:
            message = self.build(mail)
            with smtplib.SMTP(self.host, self.port, timeout=self.timeout) as smtp:
                if self.starttls:
                    smtp.starttls(context=ssl.create_default_context())
                if self.username:
                    smtp.login(self.username, self.password)
                smtp.send_message(message)
        except (OSError, smtplib.SMTPException, ValueError) as error:
            # ValueError: an address or header the email package refuses (a line break in it).
            self._count("failed")
            log.error("mail to %s not sent: %s: %s", mail.to, type(error).__name__, error)
            return False
        self._count("sent")
        return True

    def _count(self, outcome: str) -> None:
        with self._lock:
            if outcome == "sent":
                self.sent += 1
            else:
                self.failed += 1
        if self._counter is not None:
            self._counter.labels(outcome=outcome).inc()
