"""Every operation of the API under /api/v1, declared once: its method and path, its body and
answer (wire/bodies.py, wire/records.py) and the registered errors it may answer with
(wire/errors.py: each entry carries its own status, so a route cannot list a code under
another). openapi.py builds the document's paths from this table; tests/test_wire_routes.py
checks that it names every route Flask serves under /api/ and only registered codes.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import bodies, records
from .errors import (
    ACTION_ALREADY_CONFIRMED,
    ACTION_DISMISSED,
    ACTION_IN_PROGRESS,
    ACTION_UNAVAILABLE,
    ATTACHMENT_IMAGE_TOO_LARGE,
    ATTACHMENT_NOT_FOUND,
    ATTACHMENT_STORE_FULL,
    ATTACHMENT_TOO_LARGE,
    ATTACHMENT_TYPE,
    ATTACHMENTS_BUDGET_EXCEEDED,
    BODY_TIMEOUT,
    BODY_TOO_LARGE,
    CONSENT_REQUIRED,
    EMPTY_FILE,
    FAULTS_DISABLED,
    HANDOFF_ACTIVE,
    HANDOFF_BUSY,
    HANDOFF_NOT_ACTIVE,
    HANDOFF_STORE_FULL,
    IDEMPOTENCY_KEY_MISMATCH,
    IDENTITY_EXPIRED,
    IDENTITY_INVALID,
    IDENTITY_KEYS_UNAVAILABLE,
    IDENTITY_REQUIRED,
    INVALID_AFTER,
    INVALID_ARGUMENTS,
    INVALID_BODY,
    INVALID_FAULTS,
    INVALID_IDEMPOTENCY_KEY,
    INVALID_JSON,
    INVALID_LAST_EVENT_ID,
    INVALID_PERIOD,
    INVALID_UPLOAD,
    MESSAGE_NOT_COMPLETED,
    MESSAGE_NOT_FINISHED,
    METHOD_NOT_ALLOWED,
    MISSING_FILE,
    MISSING_IDEMPOTENCY_KEY,
    NOT_ADMIN,
    NOT_FOUND,
    NOT_LAST_ANSWER,
    NOT_LAST_MESSAGE,
    NOT_SIGNED_IN,
    ORIGIN_NOT_ALLOWED,
    RATE_LIMITED,
    REPORT_EXCEEDS_MESSAGE,
    REQUEST_ID_CONFLICT,
    SATISFACTION_ALREADY_GIVEN,
    SATISFACTION_NOT_OPEN,
    SERVER_BUSY,
    STORE_UNAVAILABLE,
    TOO_MANY_RUNNING,
    TOO_MANY_STREAMS,
    UNKNOWN_FIELD,
    UNSUPPORTED_MEDIA_TYPE,
    HttpError,
)
from .schema import refusals_of

# Special bodies and answers, which openapi.py describes in place: an answer's event stream, the
# conversation's event stream, an attachment's bytes, a multipart upload.
ANSWER_STREAM = "answer stream"
CONVERSATION_STREAM = "conversation stream"
FILE = "file"
UPLOAD = "upload"
# A known visitor's data as JSON Lines (privacy/api.py, GET /api/v1/me/export).
JSON_LINES = "json lines"
# The owner dashboard's numbers for a period (dashboard/api.py, docs/dashboard.md).
DASHBOARD_SUMMARY = "dashboard summary"


@dataclass(frozen=True)
class Route:
    """One operation. `answer`: a record type of wire/records.py, one of the special answers
    above, or None (no content); `body` likewise a body type of wire/bodies.py or UPLOAD. The
    errors a body's rules raise are the route's without being listed (`errors()`)."""

    method: str
    path: str
    operation_id: str
    summary: str
    ok: int
    ok_says: str
    answer: type | str | None = None
    body: type | str | None = None
    body_required: bool = True
    raises: tuple[HttpError, ...] = ()
    # Beyond the path's ids, by their names in openapi.py's parameter table.
    parameters: tuple[str, ...] = ()
    # The conversation's token may come as `?token=` (EventSource cannot set headers).
    query_token: bool = False
    description: str = ""

    def errors(self) -> tuple[HttpError, ...]:
        """Every error this operation may answer with: its own, its body's, and the ones any
        request under /api/v1 may meet (docs/security.md, "Rate limits"; a store down)."""
        found = [ORIGIN_NOT_ALLOWED, RATE_LIMITED, STORE_UNAVAILABLE]
        if "{conversation_id}" in self.path:
            found.append(NOT_FOUND)  # an unknown id and a wrong token look the same
            found += _IDENTITY_REFUSALS  # an identity token that does not verify (transport.authorize)
        if isinstance(self.body, type):
            found += [UNSUPPORTED_MEDIA_TYPE, BODY_TOO_LARGE, INVALID_JSON, INVALID_BODY, UNKNOWN_FIELD]
            found += refusals_of(self.body)
        found += self.raises
        return tuple(dict.fromkeys(found))


# What an identity token may be refused with (identity/tokens.py), on every route that takes one.
_IDENTITY_REFUSALS = (IDENTITY_INVALID, IDENTITY_EXPIRED, IDENTITY_KEYS_UNAVAILABLE)
# A known visitor's own routes (identity/api.py), authorised by the identity token alone.
ME = "/api/v1/me"
# The owner dashboard's (dashboard/api.py), authorised by an admin agent's session cookie.
ADMIN = "/api/v1/admin"
_CONVERSATION = "/api/v1/conversations/{conversation_id}"
_MESSAGE = _CONVERSATION + "/messages/{message_id}"
_ACTION = _MESSAGE + "/actions/{action_id}"
# What starting an answer may meet, whichever request starts it (chat/api.py, stream_new_answer).
_STARTS_AN_ANSWER = (
    INVALID_LAST_EVENT_ID,
    INVALID_FAULTS,
    FAULTS_DISABLED,
    REQUEST_ID_CONFLICT,
    TOO_MANY_RUNNING,
    TOO_MANY_STREAMS,
    SERVER_BUSY,
)
_OPENS_A_STREAM = (TOO_MANY_STREAMS, SERVER_BUSY)
# An id holding an encoded '/', which no valid id has, is decoded before routing and can land
# on a path that takes other methods (tests/test_api_errors.py).
_ACTION_CLAIM = (
    MESSAGE_NOT_COMPLETED,
    ACTION_ALREADY_CONFIRMED,
    ACTION_DISMISSED,
    ACTION_IN_PROGRESS,
    ACTION_UNAVAILABLE,
)
_HANDOFF_DESK = (HANDOFF_BUSY, HANDOFF_STORE_FULL, METHOD_NOT_ALLOWED)

ROUTES = (
    Route(
        "post",
        "/api/v1/conversations",
        "createConversation",
        "Start a conversation; returns its id and secret token.",
        201,
        "Created.",
        records.NewConversation,
        bodies.CreateConversation,
        body_required=False,
        raises=(*_IDENTITY_REFUSALS, IDENTITY_REQUIRED, CONSENT_REQUIRED),
        description="No body, or no `identity_token`: an anonymous conversation (refused with 401 "
        "`identity_required` when IDENTITY_REQUIRED is on). With a valid identity token the conversation "
        'belongs to its subject as well (docs/protocol.md, "Known visitors"). With CONSENT_TEXT set, '
        '`consent_sha256` is required (403 `consent_required`; docs/protocol.md, "Consent").',
    ),
    Route(
        "get",
        ME + "/conversations",
        "listMyConversations",
        "A known visitor's conversations, most recently active first (at most 50).",
        200,
        "The list.",
        records.SubjectConversationList,
        raises=_IDENTITY_REFUSALS,
        description="Authorised by the visitor's identity token (`Authorization: Bearer <JWT>`); each "
        "conversation can then be read and continued with the same token.",
    ),
    Route(
        "get",
        ME + "/export",
        "exportMyData",
        "All of a known visitor's data, as JSON Lines: each conversation, message, rating, attachment, "
        "hand-off message and left message, one record a line, typed by its `kind`.",
        200,
        "The records.",
        JSON_LINES,
        raises=_IDENTITY_REFUSALS,
        description="Authorised by the visitor's identity token (`Authorization: Bearer <JWT>`): their own "
        "subject's newest 200 conversations, never another's (docs/privacy.md).",
    ),
    Route(
        "delete",
        ME,
        "eraseMyData",
        "Erase all of a known visitor's data: every conversation of theirs, whole, and their list.",
        204,
        "Erased.",
        raises=_IDENTITY_REFUSALS,
        description="Authorised by the visitor's identity token (`Authorization: Bearer <JWT>`): each of "
        "their conversations goes as `DELETE /api/v1/conversations/{conversation_id}` removes one "
        "(docs/privacy.md).",
    ),
    Route(
        "get",
        _CONVERSATION,
        "getConversation",
        "The history: user turns and their answers (never failed or cancelled ones).",
        200,
        "The history.",
        records.ConversationHistory,
        raises=(METHOD_NOT_ALLOWED,),
    ),
    Route(
        "delete",
        _CONVERSATION,
        "deleteConversation",
        "Delete the conversation and everything of it; its running answers are cancelled first.",
        204,
        "Deleted.",
        description="Everything stored for it is gone at once (exchanges, answers and their logs, actions, "
        "feedback, its rate-limit counters); its token no longer works (404). The response expires the panel's "
        "conversation cookie.",
    ),
    Route(
        "post",
        _CONVERSATION + "/messages",
        "postMessage",
        "Send a user message; the response streams the answer's events from its start.",
        200,
        "",
        ANSWER_STREAM,
        bodies.NewMessage,
        raises=(*_STARTS_AN_ANSWER, HANDOFF_ACTIVE, ATTACHMENT_NOT_FOUND),
        parameters=("Last-Event-ID",),
        description="Idempotent on request_id: the same id and body again streams the existing answer and "
        "starts nothing.",
    ),
    Route(
        "get",
        _MESSAGE,
        "getMessage",
        "A message's state.",
        200,
        "The state.",
        records.MessageStateRecord,
        raises=(METHOD_NOT_ALLOWED,),
    ),
    Route(
        "get",
        _MESSAGE + "/events",
        "getMessageEvents",
        "Resume a message's event stream after Last-Event-ID (header or query).",
        200,
        "",
        ANSWER_STREAM,
        raises=(INVALID_LAST_EVENT_ID, *_OPENS_A_STREAM),
        parameters=("Last-Event-ID", "last_event_id", "snapshot"),
        query_token=True,
    ),
    Route(
        "post",
        _MESSAGE + "/cancel",
        "cancelMessage",
        "Stop generating this answer (no effect if it already ended).",
        200,
        "The message's state after the request.",
        records.MessageStateRecord,
    ),
    Route(
        "post",
        _MESSAGE + "/report",
        "reportMessage",
        "What the client repaired on this message's streams (counted at /metrics).",
        204,
        "Counted, if it is the message's first report; else ignored.",
        body=bodies.ClientReport,
        raises=(REPORT_EXCEEDS_MESSAGE,),
        description="One report per message: the first accepted one is counted, later ones get 204 and change "
        "nothing. Each figure is at most the message's event count so far (its last_seq); larger is 422 "
        "report_exceeds_message.",
    ),
    Route(
        "get",
        _CONVERSATION + "/actions",
        "listActions",
        "The actions proposed by this conversation's completed answers, and their status.",
        200,
        "The actions, oldest first.",
        records.ActionList,
    ),
    Route(
        "post",
        _ACTION + "/confirm",
        "confirmAction",
        "Carry out a completed answer's proposed action, exactly once.",
        200,
        "The action and what became of it.",
        records.ActionRecord,
        bodies.ConfirmAction,
        body_required=False,
        raises=(
            MISSING_IDEMPOTENCY_KEY,
            INVALID_IDEMPOTENCY_KEY,
            IDEMPOTENCY_KEY_MISMATCH,
            *_ACTION_CLAIM,
            INVALID_ARGUMENTS,
        ),
        parameters=("Idempotency-Key",),
        description="Send the action's own idempotency key (generated once per action by the client, reused on "
        "every retry) in the Idempotency-Key header or the body. The first confirm executes it; a retry with the "
        "same key gets the same outcome; another key gets 409. `status` `failed` is an outcome too (200): it is "
        "never retried.",
    ),
    Route(
        "post",
        _ACTION + "/dismiss",
        "dismissAction",
        "Decline a completed answer's proposed action; it can no longer be confirmed (idempotent).",
        200,
        "The action and what became of it.",
        records.ActionRecord,
        raises=_ACTION_CLAIM,
    ),
    Route(
        "put",
        _MESSAGE + "/feedback",
        "putFeedback",
        "Rate an ended answer (completed, failed or cancelled); replaces any earlier rating of it.",
        200,
        "The stored feedback.",
        records.StoredFeedbackRecord,
        bodies.PutFeedback,
        raises=(MESSAGE_NOT_FINISHED,),
    ),
    Route(
        "delete",
        _MESSAGE + "/feedback",
        "deleteFeedback",
        "Remove the answer's feedback (204 also when it had none).",
        204,
        "It has no feedback now.",
    ),
    Route(
        "post",
        _MESSAGE + "/regenerate",
        "regenerateMessage",
        "Answer the last turn again; the response streams the new answer's events from its start.",
        200,
        "",
        ANSWER_STREAM,
        bodies.RegenerateMessage,
        raises=(*_STARTS_AN_ANSWER, NOT_LAST_ANSWER, MESSAGE_NOT_FINISHED),
        parameters=("Last-Event-ID",),
        description="Only the conversation's last answer, once it has ended (completed, failed or cancelled). The "
        "new answer (a new message_id) replaces it in the history and in what the backend is given; the user turn "
        "stays. Idempotent on request_id, like a send.",
    ),
    Route(
        "post",
        _MESSAGE + "/edit",
        "editMessage",
        "Replace the last user message with new text and stream its answer from its start.",
        200,
        "",
        ANSWER_STREAM,
        bodies.EditMessage,
        raises=(*_STARTS_AN_ANSWER, NOT_LAST_MESSAGE, MESSAGE_NOT_FINISHED),
        parameters=("Last-Event-ID",),
        description="`message_id` is the user message's id (from the history). Only the conversation's last user "
        "message, once its answer has ended. The edited message (a new user message_id) and its answer replace the "
        "old pair in the history and in what the backend is given. Idempotent on request_id.",
    ),
    Route(
        "post",
        _CONVERSATION + "/handoff",
        "requestHandoff",
        "Ask for a person: queued, already assigned, or unavailable (nobody present, hand-off off, or closed).",
        200,
        "Where the hand-off is.",
        records.HandoffStateRecord,
        bodies.HandoffRequest,
        raises=(REQUEST_ID_CONFLICT, *_HANDOFF_DESK),
        description="Idempotent on request_id; while a hand-off is queued or assigned, any request says where it "
        "is. Then open the conversation's event stream.",
    ),
    Route(
        "delete",
        _CONVERSATION + "/handoff",
        "cancelHandoff",
        "Leave the queue or end the hand-off (`handoff.ended`, reason `visitor`); 204 also when none.",
        204,
        "No hand-off is queued or assigned now.",
        raises=_HANDOFF_DESK,
    ),
    Route(
        "post",
        _CONVERSATION + "/handoff/messages",
        "postHandoffMessage",
        "Send a message to the person (only while a hand-off is queued or assigned).",
        201,
        "Stored (or, for a retry of its request_id, stored before).",
        records.HandoffMessageCreated,
        bodies.HandoffMessage,
        raises=(HANDOFF_NOT_ACTIVE, REQUEST_ID_CONFLICT, ATTACHMENT_NOT_FOUND, *_HANDOFF_DESK),
        description="It becomes a `visitor.message` event and a `visitor` entry of the history; the backend never "
        "sees it. Idempotent on request_id.",
    ),
    Route(
        "post",
        _CONVERSATION + "/handoff/left-messages",
        "postLeftMessage",
        "Leave a message for the site's team (when nobody was available), with an optional email address.",
        201,
        "Stored (or, for a retry of its request_id, stored before).",
        records.LeftMessageCreated,
        bodies.LeftMessage,
        raises=(REQUEST_ID_CONFLICT, *_HANDOFF_DESK),
        description="It lands in the agents' inbox; a reply is shown in this conversation. Idempotent on request_id.",
    ),
    Route(
        "post",
        _CONVERSATION + "/satisfaction",
        "giveSatisfaction",
        'Answer "How was your conversation?" for a hand-off a person ended: a rating of 1–5 and an optional comment.',
        201,
        "Stored (200 with the same record for the same answer again).",
        records.SatisfactionRecord,
        bodies.GiveSatisfaction,
        raises=(SATISFACTION_NOT_OPEN, SATISFACTION_ALREADY_GIVEN, *_HANDOFF_DESK),
        description="Once per hand-off: only the conversation's latest hand-off that a person ended (`handoff.ended` "
        "with reason `ended` or `returned`), named by that event's seq, until a new one is queued (else 409 "
        "`satisfaction_not_open`). The same answer again is 200 with the stored record; another answer is 409 "
        "`satisfaction_already_given`: the first stands. A `handoff.satisfaction` event follows on the stream.",
    ),
    Route(
        "get",
        _CONVERSATION + "/events",
        "getConversationEvents",
        "The conversation's event stream: the hand-off's state and its messages, resumable.",
        200,
        "",
        CONVERSATION_STREAM,
        raises=(INVALID_LAST_EVENT_ID, INVALID_AFTER, *_OPENS_A_STREAM, METHOD_NOT_ALLOWED),
        parameters=("Last-Event-ID of the conversation", "after"),
        query_token=True,
        description="Events have `id: <conversation_id>:<seq>`. Resume with Last-Event-ID (or `?after=<seq>`); a "
        "position no longer kept gets one `conversation.snapshot` first. The stream ends once the reader has every "
        "event and no hand-off is queued or assigned.",
    ),
    Route(
        "post",
        _CONVERSATION + "/attachments",
        "uploadAttachment",
        "Upload one file for this conversation; its type is read from its content.",
        201,
        "Stored (or, for a retry of its idempotency key, stored before).",
        records.AttachmentRecord,
        UPLOAD,
        raises=(
            MISSING_FILE,
            EMPTY_FILE,
            INVALID_UPLOAD,
            UNKNOWN_FIELD,
            INVALID_IDEMPOTENCY_KEY,
            IDEMPOTENCY_KEY_MISMATCH,
            BODY_TIMEOUT,
            REQUEST_ID_CONFLICT,
            ATTACHMENT_TOO_LARGE,
            ATTACHMENTS_BUDGET_EXCEEDED,
            ATTACHMENT_IMAGE_TOO_LARGE,
            ATTACHMENT_TYPE,
            UNSUPPORTED_MEDIA_TYPE,
            ATTACHMENT_STORE_FULL,
        ),
        parameters=("Idempotency-Key of an upload",),
        description="multipart/form-data with one file part `file` and, optionally, a text field `request_id`. "
        "Idempotent on the key (`Idempotency-Key` or `request_id`): a retry with the same file stores nothing and "
        "answers the first upload again. The body may be up to ATTACHMENT_MAX_BYTES plus 16 KiB (not "
        'MAX_BODY_BYTES). See docs/protocol.md, "Attachments".',
    ),
    Route(
        "get",
        _CONVERSATION + "/attachments/{attachment_id}",
        "downloadAttachment",
        "The attachment's bytes, exactly as uploaded, with headers that keep them inert.",
        200,
        "The bytes, with the sniffed Content-Type.",
        FILE,
    ),
    Route(
        "delete",
        _CONVERSATION + "/attachments/{attachment_id}",
        "deleteAttachment",
        "Remove the attachment; its bytes no longer count against the conversation's budget.",
        204,
        "Deleted.",
    ),
    Route(
        "get",
        ADMIN + "/summary",
        "getAdminSummary",
        "The owner dashboard's numbers for a period: what the /admin page's tables show.",
        200,
        "The period's numbers (docs/dashboard.md).",
        DASHBOARD_SUMMARY,
        raises=(NOT_SIGNED_IN, NOT_ADMIN, INVALID_PERIOD, UNKNOWN_FIELD),
        parameters=("period",),
        description="For an agent signed in at /agent whose account is an admin's (`widget-server agents add NAME "
        "--admin`): the session cookie authorises it. Counted per hour of UTC; the read costs the period's hours, "
        "never its conversations.",
    ),
)
