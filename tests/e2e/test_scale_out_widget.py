"""The widget against the production setup: two `widget-server` processes
with two gevent workers each, sharing one real Redis, behind a round-robin
load balancer without sticky sessions (tests/processes.py). Every new
connection of the browser may reach another process, so a resume, a cancel
and a reload's history are served by other workers than the one generating.

The same cases as tests/e2e/test_resilience.py and test_widget.py (network
drop → resume, cancel, history after reload), in Chromium; Firefox ESR runs those cases
against one server (docs/testing.md, "Firefox ESR's share").
"""

from __future__ import annotations

import pytest
import redis
from playwright.sync_api import Page, expect

from widget_server.stores.redis import PREFIX

from ..processes import RoundRobinProxy, ServerProcess
from .test_resilience import QUESTION, applied_seqs, assert_exact, shown_text
from .test_widget import seed_structure

# Process trees behind a balancer: slow, and on the one worker that runs
# process tests in turn (docs/testing.md, "Parallel runs").
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.xdist_group("processes"),
    # Firefox ESR's share (docs/testing.md)
    pytest.mark.chromium_only(
        reason="the processes, balancer and Redis behind the page are the server's (tests/test_scale_out.py); the browser's resume, stop and reload run in Firefox in test_resilience.py and test_widget.py"
    ),
]


@pytest.fixture(scope="module")
def cluster(redis_server, host_site):
    redis_server.flush()
    settings = {
        "STORE": redis_server.url,
        "EMBED_ORIGINS": host_site.origin,
        "FAULTS": 1,
        "RATE_LIMITS": 0,
        "DEMO_DELAY_SECONDS": 0.1,
        "LOG_LEVEL": "WARNING",
    }
    servers = [ServerProcess(settings, workers=2).start() for _ in range(2)]
    proxy = RoundRobinProxy([server.url for server in servers])
    proxy.redis_url = redis_server.url
    yield proxy
    proxy.stop()
    for server in servers:
        server.stop()


def test_a_dropped_stream_resumes_on_another_server_exactly(embed, cluster, seed_answers):
    widget = embed(cluster, faults="drop-after=3")
    before = len(cluster.connections)
    widget.open()
    widget.send(QUESTION)
    assert_exact(widget, seed_answers)
    assert applied_seqs(widget) == [1, 2, 3, 4, 5, 6, 7]
    states = [e["state"] for e in widget.events() if e["name"] == "state"]
    assert "reconnecting" in states and states[-1] == "completed"
    # The answer was read through both servers (the balancer alternates).
    assert set(cluster.connections[before:]) == {0, 1}


def test_stop_cancels_the_generation_wherever_it_runs(embed, cluster):
    widget = embed(cluster)
    widget.open()
    widget.send("/scenario markdown")
    expect(widget.last_answer().locator(".turn__body")).not_to_be_empty()
    widget.stop()
    assert widget.wait_until_complete() == "cancelled"
    widget.wait_for_announcement("Answer stopped.")
    message_id = widget.last_answer().get_attribute("data-message-id")
    shown = shown_text(widget)
    # What the shared store says (the widget's own token stays in its frame).
    client = redis.Redis.from_url(cluster.redis_url)
    state = client.hget(f"{PREFIX}msg:{message_id}", "state").decode()
    text = (client.get(f"{PREFIX}msg:{message_id}:text") or b"").decode()
    client.close()
    assert state == "cancelled"
    assert shown == text  # not one character more than the server had


def test_the_conversation_is_restored_after_a_reload_from_any_server(embed, cluster, page: Page, seed_answers):
    widget = embed(cluster)
    widget.open()
    widget.send(seed_answers["improvisation"]["question"])
    assert widget.wait_until_complete() == "completed"
    for _ in range(2):  # two reloads: the history comes from each server in turn
        page.reload()
        widget.launcher.wait_for()
        widget.open()
        expect(widget.turns).to_have_count(2)
        assert seed_structure(widget) == [["p", 0], ["ul", 4], ["p", 0]]
        expect(widget.last_answer()).to_contain_text("Over Am – F – C – G")
