"""Actions: what a backend may propose and a user may confirm, executed exactly once.

docs/design.md ("Partial answers never trigger actions") asks that streamed text never trigger anything: an action runs only after
the answer completed, after its own validation, with a visible confirmation,
under its own idempotent id, and a reconnection never runs it twice. So:

1. A backend yields `ActionProposal(name, arguments)` between text pieces.
   The generator validates it at once against the named action's schema
   (`propose`): an unknown action fails the answer as `internal`, invalid
   arguments as `validation`. A valid one gets an id (`a_…`) and is stored
   with the message, announced by an `action.proposed` event.
2. Only a **completed** answer's proposals are actionable: `message.completed`
   lists them. A cancelled or failed answer never offers them, and a confirm
   of one is refused (409 `message_not_completed`).
3. `POST …/actions/<action_id>/confirm` with an `Idempotency-Key` checks the
   token, re-validates the arguments, then claims the action in the store
   with one compare-and-set (proposed → executing, recording the key). Only
   the claimer runs `execute()`; a retry with the same key waits for and
   gets the same result; another key gets 409 `action_already_confirmed`.
   Execution is at most once, on any worker: it is never re-run, even if it
   failed.

Actions are plugins, like backends: entry-point group `widget_server.actions`
(the built-in `callback_request` is registered that way in pyproject.toml).

    class BookTable(Action):
        name = "book_table"
        label = "Book a table"
        arguments_schema = {"type": "object", "required": ["people"],
                            "properties": {"people": {"type": "integer", "minimum": 1, "maximum": 12}}}

        def describe(self, arguments):
            return f"Book a table for {arguments['people']}."

        def execute(self, arguments, context):
            reference = my_booking_api.book(arguments["people"], key=context.action_id)
            return {"reference": reference}
"""

from __future__ import annotations

import fcntl
import json
import logging
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from .. import plugins
from ..backends.base import ActionProposal
from ..errors import ACTION_NOT_FOUND, ApiError, ChatError, ErrorCode
from ..messages import MessageState
from ..protocol import ACTION_PREFIX, CLIENT_KEY_RULE, is_client_key, new_id
from ..settings import Settings
from ..stores.base import CLAIMED, DISMISSED, OTHER_KEY, SAME_KEY, ActionRecord, ActionStatus, Store
from ..wire.errors import (
    ACTION_ALREADY_CONFIRMED,
    ACTION_DISMISSED,
    ACTION_IN_PROGRESS,
    ACTION_UNAVAILABLE,
    IDEMPOTENCY_KEY_MISMATCH,
    INVALID_ARGUMENTS,
    INVALID_IDEMPOTENCY_KEY,
    MESSAGE_NOT_COMPLETED,
    MISSING_IDEMPOTENCY_KEY,
    NOT_FOUND,
)

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = plugins.ACTIONS

# At most this many proposals per answer (more fails it as `internal`), and
# arguments of at most this many bytes of JSON: proposals travel in events.
MAX_ACTIONS_PER_MESSAGE = 5
MAX_ARGUMENTS_BYTES = 4096

# A confirm that finds the action being executed by another request (a
# double click, a retry after a dropped connection, another worker) waits
# this long for its result before answering 409 `action_in_progress`.
CONFIRM_WAIT_SECONDS = 15.0

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class InvalidArguments(ValueError):
    """The arguments do not satisfy the action's schema; `problems` says how."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class ActionError(Exception):
    """Raised by `execute()` for a failure it understands: the action was not
    carried out. `detail` goes to the log; `user_message` (safe) to the user."""

    def __init__(self, detail: str = "", *, user_message: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.user_message = user_message or FAILED_MESSAGE


FAILED_MESSAGE = "The action could not be carried out. It will not be retried; ask again if you still need it."


@dataclass(frozen=True)
class ActionContext:
    """What `execute()` is told besides the arguments."""

    action_id: str
    conversation_id: str
    message_id: str
    idempotency_key: str
    settings: Settings
    # Ask for a person in this conversation (HandoffService.request: conversation id, request
    # id → its answer), given by the route that confirms: the service layer imports no Flask
    # to find it (tests/test_architecture.py). None where no hand-off service runs.
    request_handoff: Callable[[str, str], dict[str, Any]] | None = None


# -- argument validation: a small JSON Schema subset ---------------------------------------------

_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}


def validate_arguments(schema: Mapping[str, Any], arguments: Any) -> dict[str, Any]:
    """Check `arguments` against a JSON-Schema-like object schema; return a copy.

    Supported: `type: object` with `properties`, `required` and
    `additionalProperties` (default false: unknown arguments are refused);
    each property's `type` (string, integer, number, boolean), `enum`,
    `minLength`/`maxLength` (in code points), `pattern` (matched in full),
    `minimum`/`maximum`. Strings may not hold control characters.
    """
    if not isinstance(arguments, dict):
        raise InvalidArguments(["arguments must be an object"])
    properties: Mapping[str, Any] = schema.get("properties", {})
    problems: list[str] = []
    for name in schema.get("required", ()):
        if name not in arguments:
            problems.append(f"{name}: required")
    if not schema.get("additionalProperties", False):
        problems += [f"{name}: unknown argument" for name in sorted(set(arguments) - set(properties))]
    for name, value in arguments.items():
        rules = properties.get(name)
        if rules is None:
            continue
        kind = rules.get("type")
        if kind is not None and not _TYPES[kind](value):
            problems.append(f"{name}: expected {kind}")
            continue
        if "enum" in rules and value not in rules["enum"]:
            problems.append(f"{name}: not one of {rules['enum']}")
        if isinstance(value, str):
            if _CONTROL.search(value):
                problems.append(f"{name}: control characters are not allowed")
            if len(value) < rules.get("minLength", 0):
                problems.append(f"{name}: shorter than {rules['minLength']}")
            if "maxLength" in rules and len(value) > rules["maxLength"]:
                problems.append(f"{name}: longer than {rules['maxLength']}")
            if "pattern" in rules and not re.fullmatch(rules["pattern"], value):
                problems.append(f"{name}: does not match {rules['pattern']}")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if value != value or value in (float("inf"), float("-inf")):
                problems.append(f"{name}: not a finite number")
            if "minimum" in rules and value < rules["minimum"]:
                problems.append(f"{name}: below {rules['minimum']}")
            if "maximum" in rules and value > rules["maximum"]:
                problems.append(f"{name}: above {rules['maximum']}")
    if problems:
        raise InvalidArguments(problems)
    if len(json.dumps(arguments, ensure_ascii=False).encode("utf-8")) > MAX_ARGUMENTS_BYTES:
        raise InvalidArguments([f"arguments: larger than {MAX_ARGUMENTS_BYTES} bytes of JSON"])
    return dict(arguments)


# -- the handler interface ---------------------------------------------------------------------


class Action:
    """Base class of an action handler. One instance serves every request of
    its worker process, concurrently: keep no per-call state on `self`.

    - `name`: how backends propose it; `label`: a short imperative phrase,
      the confirmation's subject ("Request a call back");
    - `arguments_schema`: see `validate_arguments`; `validate()` may add
      checks a schema cannot express (raise `InvalidArguments`);
    - `describe(arguments)`: one sentence saying exactly what confirming
      will do, shown to the user before they decide;
    - `execute(arguments, context)`: do it; return a JSON-serialisable dict
      (shown to API clients as `result`). Raise `ActionError` if it could
      not be done. It runs at most once per proposal; use
      `context.action_id` as the idempotency key of any upstream call.
    """

    name: str = ""
    label: str = ""
    arguments_schema: ClassVar[Mapping[str, Any]] = {"type": "object", "properties": {}}

    def validate(self, arguments: Any) -> dict[str, Any]:
        return validate_arguments(self.arguments_schema, arguments)

    def describe(self, arguments: Mapping[str, Any]) -> str:
        return f"{self.label}."

    def execute(self, arguments: Mapping[str, Any], context: ActionContext) -> dict[str, Any]:
        raise NotImplementedError


class CallbackRequest(Action):
    """The built-in example: ask the site's team to call the user back.

    Each confirmed request is appended as one JSON line to the file
    `ACTIONS_RECORD_PATH` (a stand-in for a CRM or a ticket queue that a
    person or a test can read).
    """

    name = "callback_request"
    label = "Request a call back"
    # A phone number: an optional +, then digits grouped by spaces, hyphens,
    # dots or parentheses (validate() also wants 6 to 15 digits). No nested
    # quantifier: matching stays linear whatever the input.
    PHONE_PATTERN = r"\+?[0-9(][0-9 ().-]{4,28}[0-9)]"
    arguments_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "required": ["name", "phone"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 100},
            "phone": {"type": "string", "minLength": 6, "maxLength": 30, "pattern": PHONE_PATTERN},
            "preferred_time": {"type": "string", "minLength": 1, "maxLength": 100},
        },
    }
    _lock = threading.Lock()  # one process's threads; fcntl.flock covers processes

    def validate(self, arguments: Any) -> dict[str, Any]:
        arguments = super().validate(arguments)
        problems = []
        if not arguments["name"].strip():
            problems.append("name: empty")
        digits = sum(c.isdigit() for c in arguments["phone"])
        if not 6 <= digits <= 15:
            problems.append("phone: must have 6 to 15 digits")
        if "preferred_time" in arguments and not arguments["preferred_time"].strip():
            problems.append("preferred_time: empty")
        if problems:
            raise InvalidArguments(problems)
        return arguments

    def describe(self, arguments: Mapping[str, Any]) -> str:
        text = f"Request a call back to {arguments['name']} at {arguments['phone']}"
        if arguments.get("preferred_time"):
            text += f", preferably {arguments['preferred_time']}"
        return text + "."

    def execute(self, arguments: Mapping[str, Any], context: ActionContext) -> dict[str, Any]:
        path = context.settings.chat.actions_record_path or "widget-server-actions.jsonl"
        line = json.dumps(
            {
                "at": datetime.now(UTC).isoformat(timespec="milliseconds"),
                "action": self.name,
                "action_id": context.action_id,
                "conversation_id": context.conversation_id,
                "message_id": context.message_id,
                **arguments,
            },
            ensure_ascii=False,
        )
        try:
            with self._lock, open(path, "a", encoding="utf-8") as record:
                fcntl.flock(record, fcntl.LOCK_EX)
                try:
                    record.write(line + "\n")
                    record.flush()
                finally:
                    fcntl.flock(record, fcntl.LOCK_UN)
        except OSError as error:
            raise ActionError(f"cannot append to {path}: {error}") from error
        return {"reference": context.action_id}


class HandoffOffer(Action):
    """Built in, not a plugin: a backend's offer of a person (docs/backends.md,
    "Offering a person"). The widget draws it as a "Talk to a person" button that asks for
    the hand-off as the Options control does (POST …/handoff); an API client may instead
    confirm it, which asks the same (its request_id is the action's id, so once)."""

    name = "handoff"
    label = "Talk to a person"
    arguments_schema: ClassVar[Mapping[str, Any]] = {"type": "object", "properties": {}, "additionalProperties": False}

    def describe(self, arguments: Mapping[str, Any]) -> str:
        return "Ask for a person to join this conversation."

    def execute(self, arguments: Mapping[str, Any], context: ActionContext) -> dict[str, Any]:
        if context.request_handoff is None:
            raise ActionError("no hand-off service was given to this confirm")
        return context.request_handoff(context.conversation_id, context.action_id)


# -- the registry --------------------------------------------------------------------------------


def available_actions() -> dict[str, Any]:
    """Installed actions by name (entry points, not yet loaded)."""
    return plugins.registered(plugins.ACTIONS)


def load_actions() -> dict[str, Action]:
    """Every installed action, loaded (once per application: widget_server/services.py), by
    name, and the built-in `handoff` offer (HandoffOffer).

    An entry point that fails to load is logged and left out (a proposal naming it then fails
    its answer as `internal`).
    """
    loaded: dict[str, Action] = {}
    for name, entry_point in sorted(available_actions().items()):
        try:
            handler = entry_point.load()()
        except Exception:
            log.exception("cannot load action %r", name)
            continue
        loaded[name] = handler
    loaded.setdefault(HandoffOffer.name, HandoffOffer())  # part of the server (docs/agents.md)
    return loaded


def propose(
    installed: Mapping[str, Action], proposal: ActionProposal, *, conversation_id: str, message_id: str, count: int
) -> ActionRecord:
    """Validate a backend's proposal (the generator calls this the moment it
    is yielded); the record to store, or a ChatError that fails the answer."""
    if not isinstance(proposal.name, str):
        raise ChatError(ErrorCode.INTERNAL, f"action proposal with a name of type {type(proposal.name).__name__}")
    if count >= MAX_ACTIONS_PER_MESSAGE:
        raise ChatError(ErrorCode.INTERNAL, f"more than {MAX_ACTIONS_PER_MESSAGE} action proposals in one answer")
    handler = installed.get(proposal.name)
    if handler is None:
        raise ChatError(ErrorCode.INTERNAL, f"proposed action {proposal.name!r} is not installed")
    try:
        arguments = handler.validate(proposal.arguments)
    except InvalidArguments as error:
        raise ChatError(
            ErrorCode.VALIDATION, f"action {proposal.name!r} proposed with invalid arguments: {error}"
        ) from None
    return ActionRecord(
        action_id=new_id(ACTION_PREFIX, conversation_id),
        conversation_id=conversation_id,
        message_id=message_id,
        name=proposal.name,
        arguments=arguments,
        label=handler.label or proposal.name,
        description=handler.describe(arguments),
    )


# -- confirm, dismiss, list (transport-free: raise ApiError) -----------------------------------


def _not_found() -> ApiError:
    return NOT_FOUND(ACTION_NOT_FOUND)


def _actionable(store: Store, conversation_id: str, message_id: str, action_id: str) -> ActionRecord:
    """The action, if it is one of this conversation's message's proposals and
    that message completed; else 404 or 409 `message_not_completed`."""
    action = store.action(action_id)
    if action is None or action.conversation_id != conversation_id or action.message_id != message_id:
        raise _not_found()
    info = store.message(message_id)
    if info is None or info.conversation_id != conversation_id:
        raise _not_found()
    if info.state is not MessageState.COMPLETED:
        raise MESSAGE_NOT_COMPLETED(
            f"This action's answer is {info.state.value}, not completed: only a completed answer's actions can be "
            "confirmed or dismissed.",
        )
    return action


def _already_confirmed(action: ActionRecord) -> ApiError:
    return ACTION_ALREADY_CONFIRMED(
        "This action was already confirmed (with another Idempotency-Key); it runs only once. "
        "details.action says what became of it.",
        details={"action": action.to_json()},
    )


def _dismissed(action: ActionRecord) -> ApiError:
    return ACTION_DISMISSED(
        "This action was dismissed; it can no longer be confirmed.",
        details={"action": action.to_json()},
    )


def _in_progress() -> ApiError:
    return ACTION_IN_PROGRESS(
        "This action is being carried out. Send the same request again (same Idempotency-Key) for its result.",
        retry_after=1,
    )


def confirm(
    store: Store,
    settings: Settings,
    installed: Mapping[str, Action],
    conversation_id: str,
    message_id: str,
    action_id: str,
    key: str,
    *,
    request_handoff: Callable[[str, str], dict[str, Any]] | None = None,
) -> ActionRecord:
    """Execute the action once; every confirm with the same key gets its outcome."""
    action = _actionable(store, conversation_id, message_id, action_id)
    if action.status == ActionStatus.PROPOSED:
        # Permission to run: the token (checked by the caller), the answer's
        # completion (above), and the arguments, checked again now by the
        # installed handler — what was shown is what runs, or nothing does.
        handler = installed.get(action.name)
        if handler is None:
            raise ACTION_UNAVAILABLE("This action is no longer available on this server; it was not carried out.")
        try:
            handler.validate(action.arguments)
        except InvalidArguments as error:
            raise INVALID_ARGUMENTS(
                "This action's details are not valid, so it was not carried out.",
                details={"problems": error.problems},
            ) from None
    outcome, claimed = store.claim_action(action_id, key)
    if claimed is None:
        raise _not_found()
    if outcome == CLAIMED:
        return _execute(store, settings, installed.get(claimed.name), claimed, key, request_handoff)
    if outcome == DISMISSED:
        raise _dismissed(claimed)
    if outcome == OTHER_KEY:
        raise _already_confirmed(claimed)
    assert outcome == SAME_KEY
    finished = store.wait_action(action_id, CONFIRM_WAIT_SECONDS)
    if finished is None:
        raise _not_found()
    if finished.status == ActionStatus.EXECUTING:
        raise _in_progress()
    return finished


def _execute(
    store: Store,
    settings: Settings,
    handler: Action | None,
    action: ActionRecord,
    key: str,
    request_handoff: Callable[[str, str], dict[str, Any]] | None,
) -> ActionRecord:
    context = ActionContext(action.action_id, action.conversation_id, action.message_id, key, settings, request_handoff)
    status, result, error = ActionStatus.FAILED, None, None
    try:
        if handler is None:
            raise ActionError(f"action {action.name!r} is not installed")
        result = handler.execute(action.arguments, context)
        if not isinstance(result, dict):
            raise TypeError(f"execute() returned {type(result).__name__}, expected dict")
        json.dumps(result)  # it is stored and sent as JSON
        status = ActionStatus.SUCCEEDED
    except ActionError as failure:
        log.warning("action %s (%s) failed: %s", action.action_id, action.name, failure.detail)
        result, error = None, {"code": "action_failed", "message": failure.user_message}
    except Exception:
        log.exception("action %s (%s) crashed", action.action_id, action.name)
        result, error = None, {"code": "action_failed", "message": FAILED_MESSAGE}
    else:
        log.info("action %s (%s) executed", action.action_id, action.name)
    finished = store.finish_action(action.action_id, key, status, result=result, error=error)
    return finished if finished is not None else action


def dismiss(store: Store, conversation_id: str, message_id: str, action_id: str) -> ActionRecord:
    _actionable(store, conversation_id, message_id, action_id)
    outcome, action = store.dismiss_action(action_id)
    if action is None:
        raise _not_found()
    if outcome != DISMISSED:
        raise _already_confirmed(action)
    return action


def conversation_actions(store: Store, conversation_id: str) -> list[ActionRecord]:
    """Every actionable (or acted-on) proposal of the conversation: those of its
    completed answers, oldest first."""
    found: list[ActionRecord] = []
    for exchange in store.exchanges(conversation_id):
        info = store.message(exchange.assistant_message_id)
        if info is not None and info.state is MessageState.COMPLETED:
            found += store.message_actions(exchange.assistant_message_id)
    return found


def parse_idempotency_key(header: str | None, body_key: str | None) -> str:
    """The key from the `Idempotency-Key` header or the body's `idempotency_key` (a string or
    None: wire/bodies.py's ConfirmAction checked its type)."""
    if header is not None and body_key is not None and header != body_key:
        raise IDEMPOTENCY_KEY_MISMATCH(
            "The Idempotency-Key header and the body's idempotency_key differ; send one.",
        )
    key = header if header is not None else body_key
    if not key:
        raise MISSING_IDEMPOTENCY_KEY(
            "An Idempotency-Key is required: generate it once per action and reuse it on every retry of its confirm.",
        )
    if not is_client_key(key):
        raise INVALID_IDEMPOTENCY_KEY(f"The Idempotency-Key must be {CLIENT_KEY_RULE}.")
    return key
