"""Client reports cannot inflate the metrics (docs/protocol.md, "Client reports"): one
report per message, each figure at most the message's own event count, on the memory
store and on Redis, and on Redis once across every worker process."""

from __future__ import annotations

import threading

import pytest

from ..conftest import TEST_CONFIG
from ..helpers import HTTP, ChatClient, assert_json_error
from ..processes import ServerProcess
from ..test_scale_out import metric_value

QUESTION = "which arpeggio fits Am F C G"
STORES = pytest.mark.parametrize("store_kind", ["memory", "redis"])


def _anomalies(url: str, kind: str) -> float:
    return metric_value(HTTP.get(url + "/metrics").text, "chat_client_sequence_anomalies_total", kind=kind)


@STORES
def test_repeated_reports_on_one_message_count_once(live_server_factory, chat_factory):
    server = live_server_factory()
    chat = chat_factory(server)
    done = chat.send(QUESTION, "r1")
    events = done.payloads[-1]["seq"]
    url = f"{chat.messages_url()}/{done.message_id}/report"
    for _ in range(5):  # the review's probe: five reports on one message
        response = chat.http.post(url, json={"duplicates": events, "dropped": events}, headers=chat.auth)
        assert response.status_code == 204  # accepted: a retry is harmless ...
    # ... and only the first counted.
    assert _anomalies(server.url, "duplicate") == events
    assert _anomalies(server.url, "dropped") == events
    # Another message of the same conversation has its own one report.
    other = chat.send(QUESTION, "r2")
    assert (
        chat.http.post(
            f"{chat.messages_url()}/{other.message_id}/report", json={"dropped": 1}, headers=chat.auth
        ).status_code
        == 204
    )
    assert _anomalies(server.url, "dropped") == events + 1


@STORES
def test_report_figures_above_the_message_event_count_are_refused_and_count_nothing(live_server_factory, chat_factory):
    server = live_server_factory()
    chat = chat_factory(server)
    done = chat.send(QUESTION, "r1")
    events = done.payloads[-1]["seq"]
    url = f"{chat.messages_url()}/{done.message_id}/report"
    for body in ({"duplicates": 1_000_000}, {"duplicates": events + 1}, {"dropped": events + 1, "duplicates": 0}):
        error = assert_json_error(chat.http.post(url, json=body, headers=chat.auth), 422, "report_exceeds_message")
        assert str(events) in error["error"]["message"]
    assert _anomalies(server.url, "duplicate") == 0
    assert _anomalies(server.url, "dropped") == 0
    # A refused report did not use up the message's one report.
    assert chat.http.post(url, json={"duplicates": events}, headers=chat.auth).status_code == 204
    assert _anomalies(server.url, "duplicate") == events


@pytest.mark.slow
@pytest.mark.xdist_group("processes")
def test_concurrent_reports_count_once_across_worker_processes_on_redis(redis_server):
    server = ServerProcess({**TEST_CONFIG, "STORE": redis_server.url}, workers=2).start()
    chat = ChatClient(server.url).new_conversation()
    try:
        done = chat.send(QUESTION, "r1")
        events = done.payloads[-1]["seq"]
        url = f"{server.url}{chat.messages_url()}/{done.message_id}/report"
        statuses: list[int] = []

        def report() -> None:
            # A connection each, so the reports spread over both workers.
            statuses.append(HTTP.post(url, json={"dropped": events}, headers=chat.auth).status_code)

        threads = [threading.Thread(target=report) for _ in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert statuses == [204] * 20
        # /metrics sums every worker's counters: one report counted in all.
        assert _anomalies(server.url, "dropped") == events
    finally:
        chat.close()
        server.stop()
