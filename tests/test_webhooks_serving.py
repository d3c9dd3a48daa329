"""Webhooks under `widget-server` itself (gunicorn with gevent workers, tests/processes.py): each
worker's senders are greenlets that deliver, signed, while the worker serves; with two workers
on one Redis a conversation's events still arrive once each and in order; SIGTERM stops them
with the worker."""

from __future__ import annotations

import pytest

from .helpers import ChatClient
from .processes import ServerProcess
from .webhook_support import SECRET, Receiver, delivered_types, docs_verifier

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("processes")]


def settings_for(receiver: Receiver, **more):
    return {
        "WEBHOOK_URLS": receiver.url,
        "WEBHOOK_SECRET": SECRET,
        "WEBHOOK_ALLOW_PRIVATE": "1",
        "DEMO_DELAY_SECONDS": "0",
        "RATE_LIMITS": "0",
        **more,
    }


def test_gevent_workers_deliver_in_order_and_stop_on_sigterm(redis_server):
    redis_server.flush()
    receiver = Receiver().start()
    server = ServerProcess(settings_for(receiver, STORE=redis_server.url), workers=2).start()
    try:
        conversations = []
        for number in range(4):
            chat = ChatClient(server.url).new_conversation()
            result = chat.send(f"/echo gevent {number}", f"wh-gevent-{number}")
            assert result.kinds[-1] == "message.completed", result.kinds
            conversations.append(chat.conversation_id)
            chat.close()
        got = receiver.wait_for(lambda items: len(delivered_types(items)) >= 8)
        verify = docs_verifier()
        assert all(verify(SECRET, item.headers["x-widget-server-signature"], item.body) for item in got)
        for conversation_id in conversations:
            mine = [item.json["type"] for item in got if item.json["conversation_id"] == conversation_id]
            assert mine == ["conversation.created", "message.completed"], mine
        assert len({item.json["id"] for item in got}) == len(got) == 8  # each once
        server.terminate()
        assert server.process is not None and server.process.wait(timeout=30) == 0, server.log()
        assert "Traceback" not in server.log(), server.log()
    finally:
        server.stop()
        receiver.stop()
