"""Shared by the retention and privacy tests (tests/test_retention.py, tests/test_api_privacy.py,
tests/test_privacy_cli.py): a realistic conversation over HTTP (questions and answers, a rating,
an attachment, a hand-off with a person's messages, a left message), and a scan of everything a
store holds, so a test can say that nothing of a conversation or a subject is left."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any

from widget_server.services import SERVICES_KEY
from widget_server.testing import IDENTITY_TEST_SECRET, mint_identity_token

from . import attachment_samples as samples
from .helpers import ChatClient, http_client
from .redis_support import keys_naming

SECRET = IDENTITY_TEST_SECRET
# What the servers of these tests run with: hand-off on (an agent is made present by the
# service itself), identity tokens verified with the test secret.
PRIVACY_CONFIG = {"IDENTITY_SECRET": SECRET, "HANDOFF": "on"}


def token_for(subject: str, **options: Any) -> str:
    return mint_identity_token(subject, secret=SECRET, **options)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def subject_digest(subject: str) -> str:
    """What names a subject's list key (stores/keyspace.py Keyspace.subject)."""
    return hashlib.sha256(subject.encode("utf-8")).hexdigest()[:32]


@dataclass
class Made:
    """The ids of everything a realistic conversation made: what a scan looks for."""

    conversation_id: str
    token: str
    message_ids: list[str] = field(default_factory=list)
    attachment_ids: list[str] = field(default_factory=list)
    action_ids: list[str] = field(default_factory=list)
    left_message_ids: list[str] = field(default_factory=list)

    @property
    def names(self) -> set[str]:
        return {
            self.conversation_id,
            *self.message_ids,
            *self.attachment_ids,
            *self.action_ids,
            *self.left_message_ids,
        }


def services_of(server: Any) -> Any:
    return server.app.extensions[SERVICES_KEY]


def realistic_conversation(server: Any, identity_token: str | None = None, tag: str = "a") -> Made:
    """One conversation with everything a visitor can leave in it: three answered questions (the
    third's answer proposes an action), a rating with a comment, an attachment sent with the
    second question, a hand-off to a person
    who answers and ends it, the visitor's message to that person, and a left message."""
    http = http_client(base_url=server.url, timeout=30)
    try:
        body = {"identity_token": identity_token} if identity_token else None
        created = http.post("/api/v1/conversations", json=body) if body else http.post("/api/v1/conversations")
        assert created.status_code == 201, created.text
        chat = ChatClient(server.url)
        chat.conversation_id, chat.token = created.json()["conversation_id"], created.json()["token"]
        made = Made(chat.conversation_id, chat.token)
        cid = chat.conversation_id
        first = chat.send("Which arpeggio fits Am F C G?", f"{tag}-privacy-req-01")
        assert first.kinds[-1] == "message.completed", first.kinds
        uploaded = chat.http.post(
            f"/api/v1/conversations/{cid}/attachments",
            files={"file": ("chart.gif", samples.gif(2, 2), "image/gif")},
            headers=chat.auth,
        )
        assert uploaded.status_code == 201, uploaded.text
        made.attachment_ids.append(uploaded.json()["attachment_id"])
        second = chat.stream(
            "POST",
            chat.messages_url(),
            json={
                "request_id": f"{tag}-privacy-req-02",
                "text": "And this chart?",
                "attachments": [{"attachment_id": made.attachment_ids[0]}],
            },
        )
        assert second.kinds[-1] == "message.completed", second.kinds
        third = chat.send("/scenario action", f"{tag}-privacy-req-03")
        assert third.kinds[-1] == "message.completed" and "action.proposed" in third.kinds, third.kinds
        made.message_ids += [first.message_id, second.message_id, third.message_id]
        made.action_ids += [action["action_id"] for action in third.payloads[-1]["actions"]]
        rated = chat.http.put(
            f"/api/v1/conversations/{cid}/messages/{first.message_id}/feedback",
            json={"rating": "up", "comment": "Spot on"},
            headers=chat.auth,
        )
        assert rated.status_code in (200, 201, 204), rated.text
        handoff = services_of(server).handoff
        handoff.agent_seen("ana")
        asked = chat.http.post(
            f"/api/v1/conversations/{cid}/handoff", json={"request_id": f"{tag}-privacy-ho-01"}, headers=chat.auth
        )
        assert asked.status_code in (200, 201, 202), asked.text
        assert asked.json()["state"] == "queued", asked.json()
        handoff.claim(cid, "ana", "Ana")
        handoff.agent_message(cid, "ana", f"{tag}-privacy-agent-01", "Hello, Ana here")
        said = chat.http.post(
            f"/api/v1/conversations/{cid}/handoff/messages",
            json={"request_id": f"{tag}-privacy-ho-02", "text": "Thanks Ana"},
            headers=chat.auth,
        )
        assert said.status_code in (200, 201, 202), said.text
        handoff.end(cid, "ana")
        left = chat.http.post(
            f"/api/v1/conversations/{cid}/handoff/left-messages",
            json={"request_id": f"{tag}-privacy-left-01", "text": "Call me back", "email": "ada@example.com"},
            headers=chat.auth,
        )
        assert left.status_code in (200, 201, 202), left.text
        made.left_message_ids.append(left.json()["left_message_id"])
        chat.close()
        return made
    finally:
        http.close()


def redis_traces(server: Any, names: set[str]) -> list[str]:
    """Every Redis key (every master of a cluster) naming one of `names`."""
    return keys_naming(server.app.config["WIDGET_SERVER"]["STORE"], names)


def memory_traces(server: Any, names: set[str]) -> list[str]:
    """Everything of the memory stores (the chat store's maps, the hand-off store's records,
    logs and inbox, the attachments' folder) that names one of `names`."""
    services = services_of(server)
    store, handoff_store, attachments = services.store, services.handoff.store, services.attachments
    found: list[str] = []

    def look(where: str, value: Any) -> None:
        text = repr(value)
        found.extend(f"{where}: {name}" for name in names if name in text)

    with store._lock:
        look("conversations", list(store._conversations.items()))
        look("messages", list(store._messages.items()))
        look("actions", list(store._actions.items()))
        look("subjects", list(store._subjects.items()))
        look("by_retention", list(store._by_retention.items()))
        look("ended", list(store._ended))
    with handoff_store._lock:
        look("handoff records", list(handoff_store._records.items()))
        look("handoff logs", list(handoff_store._logs.items()))
        look("handoff inbox", [handoff_store._inbox_ids, sorted(handoff_store._unreplied)])
        look("handoff visitors", list(handoff_store._visitors.items()))
    for folder, dirs, files in os.walk(attachments.root):
        look("attachment files", [folder, *dirs, *files])
    look("attachment metadata", list(attachments._conversations.items()))
    return found


def traces(server: Any, store_kind: str, names: set[str]) -> list[str]:
    return memory_traces(server, names) if store_kind == "memory" else redis_traces(server, names)


def redis_client_for(server: Any) -> Any:
    from .redis_support import redis_client

    return redis_client(server.app.config["WIDGET_SERVER"]["STORE"], decode_responses=True)
