from __future__ import annotations

from typing import Any, Callable

import pytest

from widget_server import create_app

from .helpers import ChatClient, LiveServer, load_seed_answers

# Tests run with a fast demo pace; tests that need pacing set their own.
TEST_CONFIG = {"DEMO_DELAY_SECONDS": 0.0, "LOG_LEVEL": "WARNING"}


@pytest.fixture
def app():
    return create_app(TEST_CONFIG, environ={})


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture(scope="session")
def seed_answers() -> dict:
    return load_seed_answers()


@pytest.fixture
def live_server_factory() -> Callable[..., LiveServer]:
    servers: list[LiveServer] = []

    def start(**config: Any) -> LiveServer:
        server = LiveServer({**TEST_CONFIG, **config}).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def live_server(live_server_factory) -> LiveServer:
    return live_server_factory()


@pytest.fixture
def chat_factory():
    clients: list[ChatClient] = []

    def make(server: LiveServer) -> ChatClient:
        chat = ChatClient(server.url).new_conversation()
        clients.append(chat)
        return chat

    yield make
    for chat in clients:
        chat.close()
