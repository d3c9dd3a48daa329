"""The wire contract, written once: what the server and its clients exchange.

`errors.py`: every HTTP error code the server answers with, its status and whether the same
request may succeed later. docs/protocol.md's error table and the OpenAPI document are
checked against it (tests/test_docs.py, tests/test_protocol.py), and no module raises a code
that is not in it (tests/test_architecture.py).
"""
