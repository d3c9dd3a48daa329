"""Signed visitor identity (docs/protocol.md, "Known visitors"): a site that knows its visitor
signs a token (a JWT) naming them; a conversation started with it belongs to that subject,
who can list it and resume it on any device. `identity.py` is what a token says,
`tokens.py` verifies one with PyJWT, `service.py` lists a subject's conversations, `api.py`
is the route."""
