"""CORS only where a host page needs it (docs/security.md, "CORS only on the two public scripts
a host page loads"): the loader and its second half, which host pages of any origin may load
as modules; never an API response, which another site must not read."""

from __future__ import annotations

ORIGIN = {"Origin": "https://elsewhere.example"}


def test_the_loader_and_its_second_half_allow_any_origin(client):
    for path in ("/widget.js", "/static/widget/embed.js"):
        with client.get(path, headers=ORIGIN) as response:
            assert response.status_code == 200, path
            assert response.headers["Access-Control-Allow-Origin"] == "*", path
            assert response.headers["Cross-Origin-Resource-Policy"] == "cross-origin", path
            assert "Access-Control-Allow-Credentials" not in response.headers, path


def test_nothing_else_has_cors(client):
    created = client.post("/api/v1/conversations")
    assert created.status_code == 201
    body = created.get_json()
    history = client.get(
        f"/api/v1/conversations/{body['conversation_id']}", headers={"Authorization": f"Bearer {body['token']}"}
    )
    assert history.status_code == 200
    with client.get("/static/widget/chat.js") as module:
        responses = [created, history, client.get("/panel?lang=en"), module, client.get("/healthz")]
        for response in responses:
            assert "Access-Control-Allow-Origin" not in response.headers, response.request.path
