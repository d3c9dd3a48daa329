"""The memory store has a total byte budget (MEMORY_STORE_MAX_BYTES; docs/security.md, "Memory").

Against a live server on the memory store (Redis bounds itself with key
expiry and its own maxmemory): beyond the budget the least recently used
conversations with no answer running are forgotten, so a request for one is
404 like an expired one, and a running answer is never forgotten.
"""

from __future__ import annotations

from ..helpers import ChatClient, wait_until

BUDGET = 65536


def _status(chat: ChatClient) -> int:
    return chat.history().status_code


def _message(chat: ChatClient, mid: str) -> dict:
    return chat.http.get(f"{chat.messages_url()}/{mid}", headers=chat.auth).json()


def test_the_byte_budget_forgets_least_recently_used_finished_conversations_never_a_running_answer(
    live_server_factory, chat_factory
):
    server = live_server_factory(
        MEMORY_STORE_MAX_BYTES=BUDGET, FINISHED_LOG_GRACE_SECONDS=0, MESSAGE_TIME_LIMIT_SECONDS=60
    )
    store = server.service.store
    older = chat_factory(server)
    older.send("/scenario improvisation", "r-a")
    lru = chat_factory(server)
    lru.send("/scenario improvisation", "r-b")
    running = chat_factory(server)
    hanging = running.send("/scenario hang", "r-hang", max_events=2)  # runs until cancelled
    mid = hanging.message_id
    assert _message(running, mid)["state"] == "running"

    # About 5 KB a finished conversation: 40 of them are three times the budget. `older`
    # is used all along, so `lru` and the first fillers are the least recently used.
    fillers = []
    for n in range(40):
        filler = chat_factory(server)
        assert filler.send("/scenario improvisation", f"r-{n}").kinds[-1] == "message.completed"
        fillers.append(filler)
        assert _status(older) == 200
        assert store.stored_bytes <= BUDGET

    # Forgotten like an expired conversation: 404 not_found everywhere.
    assert _status(lru) == 404
    assert lru.http.get(f"{lru.messages_url()}/x", headers=lru.auth).status_code == 404
    # The recently used one and the newest are kept; the running answer is never forgotten.
    assert _status(fillers[0]) == 404
    assert _status(older) == 200 and _status(fillers[-1]) == 200
    assert _message(running, mid)["state"] == "running"
    # ...not even when everything else must go: a budget full of running answers keeps them all.
    for filler in fillers:
        filler.send("/scenario improvisation", "r-more")
    assert _message(running, mid)["state"] == "running"
    assert running.http.post(f"{running.messages_url()}/{mid}/cancel", headers=running.auth).json()["state"] == (
        "cancelled"
    )
    assert wait_until(lambda: _message(running, mid)["state"] == "cancelled")
    assert store.stored_bytes <= BUDGET
