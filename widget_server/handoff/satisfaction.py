"""Satisfaction after a hand-off (docs/protocol.md, "Satisfaction"): when a person ends the
hand-off (`handoff.ended`, reason `ended` or `returned`), the visitor may answer "How was your
conversation?" with a rating from 1 (very poor) to 5 (very good) and an optional comment,
once for that hand-off.

A hand-off is identified by the seq of its `handoff.ended` event (`handoff` on the wire): the
panel has it from the event, or from its config after a reload (web.py `_handoff`). Only the
conversation's latest hand-off that a person ended can be rated (`rateable` in its record,
set by HandoffService._leave, cleared when a new hand-off is queued); anything else is 409
`satisfaction_not_open`.

Once per hand-off: the first answer is stored (201) and a `handoff.satisfaction` event tells
the console; the same answer again (a retry after a lost response) is the stored record (200);
a different one is 409 `satisfaction_already_given`: the first answer stands, so what an
owner's dashboard counts is what the visitor said when it happened, never a second thought
written over it.

The answers live in the conversation's hand-off record (store.py, `satisfaction`), so they
expire with the conversation (RETENTION), go with DELETE …/conversations/{cid}
(HandoffService.forget) and are exported and erased with a known visitor's data
(widget_server/privacy/). `SatisfactionService.on_submitted` is the one hook called with each
new answer, after its commit: what else should hear of it (a webhook) is connected there
(widget_server/services.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from ..wire.errors import SATISFACTION_ALREADY_GIVEN, SATISFACTION_NOT_OPEN
from . import events as ev
from .service import HandoffService, Transaction, iso
from .store import HandoffRecord, SatisfactionEntry, conversation_key

log = logging.getLogger(__name__)

# The answers a conversation keeps, oldest let go first: one per hand-off a person ended, and a
# conversation has few; the bound keeps its record bounded whatever it has (docs/security.md).
SATISFACTION_KEPT = 20
RATINGS = (1, 2, 3, 4, 5)

# Called with (conversation_id, the new answer) after its commit, never inside it, once per
# answer (a retry of the same answer is not new), in the visitor's request: a hook that talks to
# the network (a webhook) queues the work rather than making the visitor wait for it.
SubmittedHook = Callable[[str, SatisfactionEntry], None]


def open_handoff(record: HandoffRecord | None) -> int | None:
    """The hand-off the visitor may rate now (its `handoff.ended` seq), or None: none ended by a
    person, a new one going on, or answered already."""
    if record is None or record["state"] != ev.STATE_ENDED:
        return None
    rateable = record.get("rateable")
    if rateable is None or answer_for(record, rateable["handoff"]) is not None:
        return None
    return rateable["handoff"]


def answer_for(record: HandoffRecord, handoff: int) -> SatisfactionEntry | None:
    return next((entry for entry in record.get("satisfaction", []) if entry["handoff"] == handoff), None)


def as_json(conversation_id: str, entry: SatisfactionEntry) -> dict[str, Any]:
    """An answer as the API gives it (wire/records.py, SatisfactionRecord)."""
    return {"conversation_id": conversation_id, **entry}


def event_payload(entry: SatisfactionEntry) -> dict[str, Any]:
    """`handoff.satisfaction`'s data (wire/events.py, HandoffSatisfactionData)."""
    return {
        "handoff": entry["handoff"],
        "rating": entry["rating"],
        "comment": entry["comment"],
        "agent": entry["agent"],
    }


class SatisfactionService:
    """Records the visitor's answers in the hand-off store, through HandoffService's
    transactions; `on_submitted` is called with each new one (see the module's docstring)."""

    def __init__(
        self,
        handoff: HandoffService,
        *,
        on_submitted: SubmittedHook | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.handoff = handoff
        self.on_submitted = on_submitted
        self.now = now

    def give(self, conversation_id: str, handoff: int, rating: int, comment: str) -> tuple[dict[str, Any], bool]:
        """Store the visitor's answer for `handoff`: (the record, whether it is new). Idempotent
        for the same answer; 409 when nothing is open to rate or another answer was given."""
        created_at = iso(self.now())

        def change(tx: Transaction) -> tuple[SatisfactionEntry, bool]:
            record = tx.existing_conversation(conversation_id)
            given = answer_for(record, handoff) if record is not None else None
            if given is not None:
                if given["rating"] == rating and given["comment"] == comment:
                    return given, False
                raise SATISFACTION_ALREADY_GIVEN(
                    "This hand-off was already rated; the first answer stands.",
                    details={"rating": given["rating"]},
                )
            if open_handoff(record) != handoff or record is None:
                raise SATISFACTION_NOT_OPEN(
                    "There is no ended conversation with a person to rate here: only the latest one a "
                    "person ended, named by its handoff.ended event's seq.",
                )
            rateable = record["rateable"]
            entry = SatisfactionEntry(
                handoff=handoff, rating=rating, comment=comment, agent=rateable["agent_display"], created_at=created_at
            )
            answers = [*record.get("satisfaction", []), entry][-SATISFACTION_KEPT:]
            record["satisfaction"] = answers
            tx.needs_room = True  # something new: a store over its byte budget may refuse it
            tx.put(conversation_key(conversation_id), record)
            tx.emit(conversation_id, ev.SATISFACTION, event_payload(entry))
            return entry, True

        entry, created = self.handoff.transact(change)
        if created:
            self.submitted(conversation_id, entry)
        return as_json(conversation_id, entry), created

    def submitted(self, conversation_id: str, entry: SatisfactionEntry) -> None:
        """THE hook: a new answer was recorded (committed). A failing hook is logged, never the
        visitor's error: their answer is stored either way."""
        self.handoff.metrics.satisfaction(entry["rating"])
        if self.on_submitted is None:
            return
        try:
            self.on_submitted(conversation_id, entry)
        except Exception:
            log.exception("the satisfaction hook failed")

    def answers(self, conversation_id: str) -> list[dict[str, Any]]:
        """Every answer the conversation keeps, oldest first (the console; a subject's export)."""
        record = self.handoff.stored_record(conversation_id)
        kept = record.get("satisfaction", []) if record is not None else []
        return [as_json(conversation_id, entry) for entry in kept]

    def open_for(self, conversation_id: str) -> int | None:
        """The hand-off the visitor may rate now, or None (web.py: a reloaded panel asks again)."""
        return open_handoff(self.handoff.stored_record(conversation_id))
