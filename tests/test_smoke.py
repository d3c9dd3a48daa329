def test_seed_answer_streams_exactly(live_server, chat_factory, seed_answers):
    chat = chat_factory(live_server)
    seed = seed_answers["improvisation"]
    result = chat.send(seed["question"], "r1")
    assert result.status == 200
    assert result.kinds[0] == "message.started" and result.kinds[-1] == "message.completed"
    assert result.text == seed["answer"]


def test_every_page_renders(client):
    """The demo home page, the panel, the full-page chat, health and metrics
    (a page links to other endpoints by name: a renamed endpoint is a 500)."""
    for path, kind in (
        ("/", "text/html"),
        ("/chat", "text/html"),
        ("/panel", "text/html"),
        ("/healthz", "application/json"),
        ("/metrics", "text/plain"),
    ):
        response = client.get(path)
        assert response.status_code == 200, (path, response.data[:200])
        assert response.headers["content-type"].startswith(kind), path
    assert b'href="/healthz"' in client.get("/").data
