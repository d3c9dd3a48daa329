"""The growing wait after failed agent sign-ins (widget_server/agents/sign_in_delay.py;
docs/security.md, "The agent console"; docs/agents.md, "Sessions").

Through the real app and its real form, on the memory store, one redis-server and a Redis
Cluster. Time is the delays' injected clock, moved by the tests: nothing here sleeps. Rate
limits stay off (TEST_CONFIG) unless a test is about both: the wait does not depend on them."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from widget_server import create_app
from widget_server.agents.sessions import SESSION_COOKIE
from widget_server.agents.sign_in_delay import (
    CLIENT_MAX_DELAY_SECONDS,
    DEVICE_COOKIE,
    FORGET_AFTER_SECONDS,
    NAME_MAX_DELAY_SECONDS,
    MemorySignInDelays,
    SignInDelays,
)
from widget_server.services import SERVICES_KEY

from ..agent_support import AGENTS, set_cookies, sign_in_form
from ..conftest import TEST_CONFIG
from ..test_agents_i18n import LANGUAGES
from ..test_scale_out import metric_value

RIGHT = AGENTS["alice"][1]
STRANGER = "198.51.100.9"


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def move(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(params=["memory", "redis", "cluster"])
def store_config(request):
    if request.param == "memory":
        yield {}
        return
    server = request.getfixturevalue("redis_cluster" if request.param == "cluster" else "redis_server")
    server.flush()
    yield {"STORE": server.url}
    # The counts these tests leave would make a later test's sign-in on the shared server wait.
    server.flush()


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def make_app(agents_file, store_config, clock):
    def make(**config):
        app = create_app({**TEST_CONFIG, **store_config, "AGENTS_FILE": str(agents_file), **config}, environ={})
        app.extensions[SERVICES_KEY].sign_in_delays.clock = clock
        return app

    return make


@pytest.fixture
def app(make_app):
    return make_app()


@pytest.fixture
def memory_app(agents_file, clock):
    """For what does not depend on where the counts are (the metric, the log line)."""
    app = create_app({**TEST_CONFIG, "AGENTS_FILE": str(agents_file)}, environ={})
    app.extensions[SERVICES_KEY].sign_in_delays.clock = clock
    return app


def attempt(client, name="alice", password=RIGHT, address="127.0.0.1"):
    """One sign-in through the form, from `address`."""
    token = sign_in_form(client)
    return client.post(
        "/agent/sign-in",
        data={"name": name, "password": password, "csrf_token": token},
        environ_base={"REMOTE_ADDR": address},
    )


def sign_out(client) -> None:
    csrf = client.get("/agent/api/session").get_json()["csrf_token"]
    assert client.post("/agent/sign-out", data={"csrf_token": csrf}).status_code == 303


def refused_for(response) -> int:
    """The seconds a 429 asks to wait (its Retry-After)."""
    assert response.status_code == 429, response.status_code
    assert SESSION_COOKIE not in set_cookies(response)
    return int(response.headers["Retry-After"])


def test_failures_grow_the_wait_and_an_attempt_inside_it_is_refused_even_with_the_right_password(app, clock):
    client = app.test_client()
    client.get("/agent?lang=es")  # the refusal is said in the agent's language
    for _ in range(3):  # the free ones
        assert attempt(client, password="wrong").status_code == 401
    waits = []
    for _ in range(4):
        refused = attempt(client)  # the right password, inside the wait: not even read
        waits.append(refused_for(refused))
        body = refused.get_data(as_text=True)
        assert LANGUAGES["es"]["signInRateLimited"].replace("{seconds}", str(waits[-1])) in body
        clock.move(waits[-1] - 0.5)
        refused_for(attempt(client))  # still inside it
        clock.move(0.5)
        assert attempt(client, password="wrong").status_code == 401
    assert waits == [1, 2, 4, 8]
    clock.move(16)
    assert attempt(client).status_code == 303


def test_the_names_wait_is_capped_so_a_stranger_never_locks_the_agent_out(app, clock):
    stranger = app.test_client()
    waits = []
    for number in range(14):
        # From a new address each time: only the name's count grows.
        response = attempt(stranger, password="guess", address=f"203.0.113.{number}")
        if response.status_code == 429:
            waits.append(refused_for(response))
            clock.move(waits[-1])
            response = attempt(stranger, password="guess", address=f"203.0.113.{number}")
        assert response.status_code == 401
    assert waits == [1, 2, 4, 8, 16, 32, 60, 60, 60, 60, 60]
    # The agent, on a browser that never signed in here: one minute at most, then in.
    agent = app.test_client()
    assert refused_for(attempt(agent)) <= NAME_MAX_DELAY_SECONDS
    clock.move(NAME_MAX_DELAY_SECONDS)
    assert attempt(agent).status_code == 303


def test_the_agents_own_browser_is_not_held_up_by_a_strangers_failures(make_app):
    # The name's rate limit too: a browser with the name's device cookie is counted by its
    # address alone (ratelimits.RateLimits.check_sign_in).
    app = make_app(RATE_LIMITS=True, RATE_LIMIT_AGENT_SIGN_IN="5/minute")
    own = app.test_client()
    signed_in = attempt(own)
    assert signed_in.status_code == 303
    cookie = set_cookies(signed_in)[DEVICE_COOKIE]
    assert DEVICE_COOKIE.startswith("__Host-") and cookie["path"] == "/" and "domain" not in cookie
    assert "secure" in cookie and "httponly" in cookie and cookie["samesite"] == "Strict"
    assert int(cookie["max-age"]) >= 180 * 24 * 3600
    assert len(cookie["value"]) >= 43  # 256 random bits

    stranger = app.test_client()
    for number in range(3):
        assert attempt(stranger, password="guess", address=f"203.0.113.{number}").status_code == 401
    assert refused_for(attempt(stranger, password="guess", address="203.0.113.3")) == 1  # the name's wait
    # Another browser waits (the name's wait; now its rate limit is spent too), ...
    assert refused_for(attempt(app.test_client(), address="192.0.2.1")) >= 1
    # ... the agent's own, signed out since, is let in at once, and given a new device token.
    sign_out(own)
    again = attempt(own)
    assert again.status_code == 303
    assert set_cookies(again)[DEVICE_COOKIE]["value"] != cookie["value"]

    # A copy of the old token is worth nothing now.
    copied = app.test_client()
    copied.set_cookie(DEVICE_COOKIE, cookie["value"], path="/", secure=True)
    assert refused_for(attempt(copied, address="192.0.2.3")) >= 1
    # The cookie speaks for its own name only.
    for number in range(3):
        assert attempt(stranger, name="bob", password="guess", address=f"203.0.113.{10 + number}").status_code == 401
    sign_out(own)
    assert refused_for(attempt(own, name="bob", password=AGENTS["bob"][1], address="192.0.2.2")) == 1


def test_the_clients_wait_counts_failures_under_every_name_and_is_capped(app, clock):
    client = app.test_client()
    for name in ("carol", "dave", "erin"):
        assert attempt(client, name=name, password="guess").status_code == 401
    # A fourth name, the right password: the address waits.
    assert refused_for(attempt(client, name="bob", password=AGENTS["bob"][1])) == 1
    # Another address is not held up.
    assert attempt(app.test_client(), name="bob", password=AGENTS["bob"][1], address="192.0.2.4").status_code == 303
    waits = []
    for number in range(15):
        response = attempt(client, name=f"name{number}", password="guess")
        waits.append(refused_for(response))
        clock.move(waits[-1])
        assert attempt(client, name=f"name{number}", password="guess").status_code == 401
    assert waits[:5] == [1, 2, 4, 8, 16] and max(waits) == CLIENT_MAX_DELAY_SECONDS == waits[-1]


def test_a_success_clears_the_names_and_the_clients_counts(app, clock):
    client = app.test_client()
    for _ in range(3):
        assert attempt(client, password="wrong").status_code == 401
    clock.move(1)
    assert attempt(client).status_code == 303
    # Three free failures again, for the name and for the address, then the first wait.
    for _ in range(3):
        assert attempt(app.test_client(), password="wrong").status_code == 401
    assert refused_for(attempt(app.test_client())) == 1


def test_a_count_is_forgotten_a_day_after_its_last_attempt(app, clock):
    client = app.test_client()
    for _ in range(3):
        assert attempt(client, password="wrong").status_code == 401
    clock.move(FORGET_AFTER_SECONDS - 10)
    assert attempt(client, password="wrong").status_code == 401  # the 4th: still counted, ...
    assert refused_for(attempt(client)) == 2  # ... as its wait says
    clock.move(FORGET_AFTER_SECONDS)
    for _ in range(3):
        assert attempt(client, password="wrong").status_code == 401
    assert refused_for(attempt(client)) == 1


def test_failures_and_refusals_are_counted_in_the_metrics(memory_app, clock):
    app = memory_app
    client = app.test_client()
    for _ in range(4):
        response = attempt(client, password="wrong")
    assert response.status_code == 429
    clock.move(1)
    assert attempt(client).status_code == 303
    text = client.get("/metrics").get_data(as_text=True)
    assert metric_value(text, "chat_agent_sign_ins_refused_total", reason="wrong_credentials") == 3
    assert metric_value(text, "chat_agent_sign_ins_refused_total", reason="delayed") == 1


def test_repeated_failures_are_logged_with_the_name_and_the_address_never_the_password(memory_app, clock, caplog):
    app = memory_app
    client = app.test_client()
    caplog.set_level(logging.WARNING, logger="widget_server.agents.sign_in_delay")
    warned_at = []
    for number in range(1, 11):
        caplog.clear()
        response = attempt(client, password=f"secret-guess-{number}", address="192.0.2.77")
        if response.status_code == 429:
            clock.move(refused_for(response))
            response = attempt(client, password=f"secret-guess-{number}", address="192.0.2.77")
        assert response.status_code == 401
        if caplog.records:
            warned_at.append(number)
            (record,) = caplog.records
            assert record.levelno == logging.WARNING
            message = record.getMessage()
            assert f"{number} for the name 'alice'" in message and f"{number} from the client 192.0.2.77" in message
            assert "secret-guess" not in message
    assert warned_at == [5, 10]


def test_parallel_attempts_cannot_slip_through_one_open_moment(app, clock):
    delays: SignInDelays = app.extensions[SERVICES_KEY].sign_in_delays
    results = []

    def one(number: int) -> None:
        results.append(delays.begin(f"192.0.2.{number}", "alice", None))

    threads = [threading.Thread(target=one, args=(number,)) for number in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(result.refused for result in results) == [False] * 3 + [True] * 9


def test_the_process_keeps_a_bounded_number_of_counts_and_devices(clock):
    delays = MemorySignInDelays(clock=clock, max_counts=50, max_devices=5)
    for number in range(500):
        attempt_ = delays.begin(f"192.0.2.{number % 250}", f"name{number}", None)
        delays.failed(attempt_)
        if number % 10 == 0:
            delays.succeeded(attempt_)
        clock.move(0.01)
    assert len(delays) <= 55
