"""A delivery's signature (docs/webhooks.md, "Verifying a delivery"): pure.

`X-Widget-Server-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`, the HMAC keyed with
WEBHOOK_SECRET over `<t>.` and the body's bytes, as Stripe and GitHub-style receivers verify it:
the timestamp is signed with the body, so a receiver that refuses an old `t` refuses a replay,
and each attempt is signed anew (its own `t`) while its body, and so its id, stay the same.
"""

from __future__ import annotations

import hashlib
import hmac


def signature(secret: str, body: bytes, timestamp: int) -> str:
    """The header's value for `body` sent at `timestamp`."""
    digest = hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"
