"""What a verified identity token says about its visitor: who (`sub`), and optionally their
name and email, as plain text (never markup: the console and the panel show them as text
nodes; docs/security.md, "Known visitors")."""

from __future__ import annotations

from dataclasses import dataclass

from ..messages import clean_text

# Bounds on what a token may carry: a subject is a site's user id, a name a person's name, an
# email an address (RFC 5321 §4.5.3.1.3 allows 254); longer values are refused, never cut.
SUBJECT_MAX_CHARS = 200
NAME_MAX_CHARS = 200
EMAIL_MAX_CHARS = 254


@dataclass(frozen=True)
class Identity:
    """A visitor the site vouches for. `name` and `email` are "" when the token has none."""

    subject: str
    name: str = ""
    email: str = ""

    def visitor_record(self) -> dict[str, str]:
        """What the agents' console is told about the visitor (docs/agents.md, "Known visitors")."""
        return {"subject": self.subject, "name": self.name, "email": self.email}


def claim_text(value: object, *, most: int) -> str | None:
    """An optional string claim (`name`, `email`) as shown: cleaned as a message's text is
    (messages.clean_text: control characters, lone surrogates), on one line, stripped; "" when
    absent; None when it is not a string or is longer than `most` characters (refused, never
    cut: a cut address would be another one)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        return None
    text = " ".join(clean_text(value).split())
    return text if len(text) <= most else None
