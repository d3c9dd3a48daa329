"""The wire contract, written once: what the server and its clients exchange.

`errors.py`: every HTTP error code the server answers with, its status and whether the same
request may succeed later. docs/protocol.md's error table and the OpenAPI document are
checked against it (tests/test_docs.py, tests/test_protocol.py), and no module raises a code
that is not in it (tests/test_architecture.py). `events.py`: every event type of an answer's
stream and of the conversation event stream, and an answer's states, gathered from where they
are made. `javascript.py`: static/widget/protocol.js, the panel's copy of these names, written
from them (`python -m widget_server.wire.javascript`).

`bodies.py`: every JSON request body as a type whose fields carry their rules; `records.py`:
the JSON records the API answers with; `routes.py`: every operation of the API, its body,
answer and errors, from which openapi.py builds the document's paths; `schema.py`
checks a request's JSON against such a type (`parse_body`) and describes it as JSON Schema
for the OpenAPI document (`json_schema`).
"""
