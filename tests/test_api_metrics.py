"""/metrics: what users experienced, each ending counted once (memory and Redis)."""

from __future__ import annotations

from .helpers import HTTP, assert_json_error, wait_until
from .test_scale_out import metric_value

QUESTION = "which arpeggio fits Am F C G"


def metrics(server) -> str:
    response = HTTP.get(server.url + "/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return response.text


def test_endings_latencies_resumes_and_snapshots_are_counted(live_server_factory, chat_factory):
    server = live_server_factory(FAULTS=True, DEMO_DELAY_SECONDS=0.02)
    chat = chat_factory(server)
    before = metrics(server)
    assert metric_value(before, "chat_messages_ended_total", state="completed", code="") == 0

    done = chat.send(QUESTION, "r1")
    assert done.kinds[-1] == "message.completed"
    failed = chat.send("/scenario fail-provider", "r2")
    assert failed.kinds[-1] == "message.failed"
    slow = chat.send("/scenario slow", "r3", max_events=2)
    assert chat.cancel(slow.message_id).json()["state"] == "cancelled"
    assert chat.cancel(slow.message_id).status_code == 200  # again: already ended
    cut = chat.send(QUESTION, "r4", max_events=2)
    resumed = chat.resume(cut.message_id, cut.events[-1].id)
    assert resumed.kinds[-1] == "message.completed"
    snap = chat.stream(
        "GET", chat.events_url(cut.message_id) + "?snapshot=1", headers={"Last-Event-ID": cut.events[-1].id}
    )
    assert snap.kinds[0] == "message.snapshot"

    text = metrics(server)
    assert metric_value(text, "chat_messages_ended_total", state="completed", code="") == 2
    assert metric_value(text, "chat_messages_ended_total", state="failed", code="provider") == 1
    assert metric_value(text, "chat_messages_ended_total", state="cancelled", code="") == 1
    assert metric_value(text, "chat_cancel_requests_total", outcome="cancelled") == 1
    assert metric_value(text, "chat_cancel_requests_total", outcome="already_ended") == 1
    assert metric_value(text, "chat_time_to_completion_seconds_count") == 2
    # Every answer that produced text had a first delta (the failed and the cancelled too).
    assert metric_value(text, "chat_time_to_first_delta_seconds_count") == 4
    assert metric_value(text, "chat_resumes_total") == 2
    assert metric_value(text, "chat_snapshots_served_total") == 1
    # Streams are all closed again.
    assert wait_until(lambda: metric_value(metrics(server), "chat_open_streams") == 0)


def test_client_reports_are_counted_and_validated(live_server_factory, chat_factory):
    server = live_server_factory()
    chat = chat_factory(server)
    done = chat.send(QUESTION, "r1")
    url = f"{chat.messages_url()}/{done.message_id}/report"
    response = chat.http.post(url, json={"duplicates": 2, "dropped": 3}, headers=chat.auth)
    assert response.status_code == 204
    # One report per message (docs/protocol.md, "Client reports"): a second is accepted and counts nothing.
    assert chat.http.post(url, json={"dropped": 1}, headers=chat.auth).status_code == 204
    text = metrics(server)
    assert metric_value(text, "chat_client_sequence_anomalies_total", kind="duplicate") == 2
    assert metric_value(text, "chat_client_sequence_anomalies_total", kind="dropped") == 3
    for body, code in (
        ({"duplicates": -1}, "invalid_report"),
        ({"duplicates": 1.5}, "invalid_report"),
        ({"duplicates": True}, "invalid_report"),
        ({"dropped": 10**9}, "invalid_report"),
        ({"gaps": 1}, "unknown_field"),
        ([], "invalid_body"),
    ):
        assert_json_error(chat.http.post(url, json=body, headers=chat.auth), 400, code)
    assert_json_error(chat.http.post(url, json={"dropped": 1}), 404, "not_found")
    other = chat_factory(server)
    assert_json_error(
        other.http.post(f"{other.messages_url()}/{done.message_id}/report", json={}, headers=other.auth), 404
    )
    # Refused reports counted nothing.
    assert metric_value(metrics(server), "chat_client_sequence_anomalies_total", kind="dropped") == 3


def test_metrics_can_be_turned_off(live_server_factory):
    server = live_server_factory(METRICS=False)
    assert_json_error(HTTP.get(server.url + "/metrics"), 404, "not_found")


def test_healthz_reports_the_store(live_server_factory, store_kind):
    body = HTTP.get(live_server_factory().url + "/healthz").json()
    assert body["status"] == "ok" and body["store"] == "ok"
