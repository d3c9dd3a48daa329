"""The baseline for bench/load.py: a minimal sse-starlette + uvicorn endpoint.

It speaks the same two POSTs and streams the same events as widget_server, so
the same client runs against both:

    POST /api/v1/conversations                    → 201 {"conversation_id", "token"}
    POST /api/v1/conversations/<cid>/messages     → 200 text/event-stream
         (Authorization: Bearer <token>; JSON {"text", "request_id"})
    GET  /healthz                                 → 200 {"status": "ok"}

The stream is `retry: 2000`, then `message.started` (seq 1), one `text.delta`
per chunk, `message.completed` with `length`, `utf8_bytes` and `sha256`: the
same event names, ids (`<message_id>:<seq>`), one-line JSON data and LF line
ends as widget_server. The chunks are exactly the demo backend's for the same
text (widget_server.backends.demo, run with no delay), paced the same way:
`WIDGET_SERVER_DEMO_DELAY_SECONDS` between chunks, none before the first.

What it leaves out, on purpose (it is the floor, not a competitor): no store,
no background generation, no resume log, no idempotency, no limits, no time
limit. The answer is generated inside the response, in memory. Run it as one
uvicorn process (the fair match for one gevent worker):

    .venv/bin/python -m uvicorn bench.baseline_app:app --host 127.0.0.1 --port 8001 \\
        --loop uvloop --http httptools --no-access-log
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from widget_server.backends.base import CancelToken, Turn
from widget_server.backends.demo import DemoBackend
from widget_server.messages import text_digest
from widget_server.protocol import ASSISTANT_MESSAGE_PREFIX, CONVERSATION_PREFIX, event_id, new_id

PACE = float(os.environ.get("WIDGET_SERVER_DEMO_DELAY_SECONDS", "0.04"))
RETRY_MS = 2000
_DEMO = DemoBackend(delay=0)  # only to cut the text into the demo's chunks
_CONVERSATIONS: dict[str, str] = {}  # conversation_id → token


def _not_found() -> JSONResponse:
    return JSONResponse({"error": {"code": "not_found", "message": "No such conversation."}}, status_code=404)


def _dumps(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


async def create_conversation(request: Request) -> JSONResponse:
    conversation_id = new_id(CONVERSATION_PREFIX)
    token = secrets.token_urlsafe(32)
    _CONVERSATIONS[conversation_id] = token
    return JSONResponse({"conversation_id": conversation_id, "token": token}, status_code=201)


async def post_message(request: Request):
    conversation_id = request.path_params["conversation_id"]
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or _CONVERSATIONS.get(conversation_id) != token.strip():
        return _not_found()
    body = await request.json()
    text, request_id = body.get("text"), body.get("request_id")
    if not isinstance(text, str) or not text.strip() or not isinstance(request_id, str) or not request_id:
        return JSONResponse({"error": {"code": "invalid_body", "message": "text and request_id"}}, status_code=400)
    chunks = [chunk for chunk in _DEMO.stream(Turn(text), CancelToken()) if isinstance(chunk, str) and chunk]
    message_id = new_id(ASSISTANT_MESSAGE_PREFIX)

    async def events():
        yield ServerSentEvent(retry=RETRY_MS)
        seq = 1
        yield ServerSentEvent(
            _dumps({"message_id": message_id, "seq": seq}), event="message.started", id=event_id(message_id, seq)
        )
        answer = []
        for index, chunk in enumerate(chunks):
            if index and PACE:
                await asyncio.sleep(PACE)
            seq += 1
            answer.append(chunk)
            data = {"message_id": message_id, "seq": seq, "text": chunk}
            yield ServerSentEvent(_dumps(data), event="text.delta", id=event_id(message_id, seq))
        seq += 1
        data = {"message_id": message_id, "seq": seq, **text_digest("".join(answer))}
        yield ServerSentEvent(_dumps(data), event="message.completed", id=event_id(message_id, seq))

    return EventSourceResponse(
        events(),
        sep="\n",
        ping=15,  # as HEARTBEAT_SECONDS
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no", "Content-Encoding": "identity"},
    )


async def healthz(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok", "backend": "baseline"})


app = Starlette(
    routes=[
        Route("/api/v1/conversations", create_conversation, methods=["POST"]),
        Route("/api/v1/conversations/{conversation_id}/messages", post_message, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
    ]
)
