"""The attachment routes (docs/protocol.md, "Attachments"): upload, download, delete.

A thin adapter like the other blueprints: authorised by the conversation's token
(`transport.authorize`, before a byte of the upload is read), rate-limited (ratelimits.py:
RATE_LIMIT_ATTACHMENTS per conversation, besides the per-client limit), and bounded. The
upload's body may exceed MAX_BODY_BYTES, so its endpoint is in `transport.LARGE_BODY_ENDPOINTS`:
the body is read here, with the same guards (Content-Length checked before reading, a chunked
body cut at the limit, a deadline: ATTACHMENT_UPLOAD_TIMEOUT_SECONDS) and a limit of
ATTACHMENT_MAX_BYTES plus room for the multipart framing, into a temporary file (in memory
up to MAX_BODY_BYTES, on disk beyond), never whole into memory.

A download is served so that no browser can run it (docs/security.md, "Attachments"): the
sniffed Content-Type, `X-Content-Type-Options: nosniff`, `Content-Security-Policy: sandbox`,
`Content-Disposition: attachment` (inline only for raster images), private and uncached.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from typing import IO, Any, BinaryIO

from flask import Blueprint, Flask, Response, jsonify, request
from werkzeug.datastructures import FileStorage
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.formparser import FormDataParser
from werkzeug.wsgi import wrap_file

from ..errors import CONVERSATION_NOT_FOUND, ApiError
from ..protocol import ATTACHMENT_PREFIX, CLIENT_KEY_RULE, is_client_key, new_id
from ..transport import (
    LARGE_BODY_ENDPOINTS,
    IdConverter,
    authorize,
    chat_service,
    read_large_body,
    services,
    settings,
)
from ..wire.errors import (
    ATTACHMENT_IN_MESSAGE,
    ATTACHMENT_STORE_FULL,
    ATTACHMENT_TOO_LARGE,
    ATTACHMENTS_BUDGET_EXCEEDED,
    EMPTY_FILE,
    IDEMPOTENCY_KEY_MISMATCH,
    INVALID_IDEMPOTENCY_KEY,
    INVALID_UPLOAD,
    MISSING_FILE,
    NOT_FOUND,
    REQUEST_ID_CONFLICT,
    UNKNOWN_FIELD,
    UNSUPPORTED_MEDIA_TYPE,
)
from .names import content_disposition, display_name
from .sniff import IMAGE_TYPES, MEDIA_TYPES, sniff
from .store import AttachmentMeta, AttachmentStore, BudgetExceeded, ConversationGone, StoreFull

bp = Blueprint("attachments", __name__, url_prefix="/api/v1")

ATTACHMENT_NOT_FOUND = "No such attachment in this conversation."
# Room for the multipart framing around the file (boundaries, part headers, a request_id)
# beyond ATTACHMENT_MAX_BYTES: the body's limit. The file's own size is checked after parsing.
MULTIPART_OVERHEAD_BYTES = 16384
_FIELDS = ("file", "request_id")
# What werkzeug's multipart parser may buffer in memory: a text field whole, and its reads of
# 64 KiB (it checks this bound on each read, files included). The file goes to a temporary file.
_FORM_MEMORY_BYTES = 4 * 65536
# 503 attachment_store_full: space comes back as conversations expire or are deleted.
STORE_FULL_RETRY_AFTER_SECONDS = 60
_HASH_CHUNK = 1 << 16


class AttachmentIdConverter(IdConverter):
    not_found = ATTACHMENT_NOT_FOUND


def attachment_store() -> AttachmentStore:
    return services().attachments


def _not_found() -> ApiError:
    return NOT_FOUND(ATTACHMENT_NOT_FOUND)


def _too_large(limit: int) -> ApiError:
    return ATTACHMENT_TOO_LARGE(
        f"The file is larger than the limit of {limit} bytes.",
        details={"limit": limit},
    )


def _idempotency_key(form_key: str | None) -> str:
    """The upload's idempotency key: the `Idempotency-Key` header or the form's `request_id`
    (the same one if both), or "" for none."""
    header = request.headers.get("Idempotency-Key")
    if header is not None and form_key is not None and header != form_key:
        raise IDEMPOTENCY_KEY_MISMATCH("The Idempotency-Key header and the form's request_id differ.")
    key = header if header is not None else form_key
    if key is not None and not is_client_key(key):
        raise INVALID_IDEMPOTENCY_KEY(f"The idempotency key must be {CLIENT_KEY_RULE}.")
    return key or ""


def _parse(body: IO[bytes], size: int) -> tuple[dict[str, list[str]], dict[str, list[FileStorage]]]:
    created: list[IO[bytes]] = []

    def file_part(*_args: Any, **_kwargs: Any) -> IO[bytes]:
        # Where a file part goes: memory up to MAX_BODY_BYTES, then disk; closed by the caller.
        part: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=settings().web.max_body_bytes)  # noqa: SIM115
        created.append(part)
        return part

    parser = FormDataParser(
        stream_factory=file_part,
        max_form_memory_size=_FORM_MEMORY_BYTES,
        max_form_parts=len(_FIELDS) + 1,
        silent=False,
    )
    try:
        _stream, form, files = parser.parse(body, "multipart/form-data", size, request.mimetype_params)
    except (ValueError, RequestEntityTooLarge):
        for part in created:
            part.close()
        raise INVALID_UPLOAD("The body is not a multipart/form-data upload this server can read.") from None
    return form.to_dict(flat=False), files.to_dict(flat=False)


def _checked_fields(form: dict[str, list[str]], files: dict[str, list[FileStorage]]) -> tuple[FileStorage, str | None]:
    """The one file of the field `file`, and the `request_id` text field if given."""
    unknown = sorted(name for name in {*form, *files} if name not in _FIELDS)
    if unknown:
        raise UNKNOWN_FIELD(
            f"Unknown form field: {', '.join(unknown)}. Send `file` and, optionally, `request_id`.",
        )
    uploads = files.get("file", [])
    if not uploads:  # absent, or sent as a text field
        raise MISSING_FILE("Send the file in the form field `file`, as a file part.")
    if len(uploads) > 1 or "file" in form:
        raise INVALID_UPLOAD("Send one file per upload, in the form field `file`.")
    if "request_id" in files or len(form.get("request_id", [])) > 1:
        raise INVALID_UPLOAD("request_id, if given, is one text field.")
    request_ids = form.get("request_id")
    return uploads[0], request_ids[0] if request_ids else None


def _size_and_sha256(stream: BinaryIO) -> tuple[int, str]:
    digest = hashlib.sha256()
    stream.seek(0)
    size = 0
    while chunk := stream.read(_HASH_CHUNK):
        digest.update(chunk)
        size += len(chunk)
    stream.seek(0)
    return size, digest.hexdigest()


@bp.post("/conversations/<conversation:conversation_id>/attachments")
def upload_attachment(conversation_id: str) -> Response:
    authorize(conversation_id)
    values = settings()
    if request.mimetype != "multipart/form-data":
        raise UNSUPPORTED_MEDIA_TYPE(
            "Send the file as multipart/form-data, in the form field `file`.",
        )
    max_bytes: int = values.attachments.max_bytes
    with read_large_body(
        max_bytes + MULTIPART_OVERHEAD_BYTES,
        values.attachments.upload_timeout_seconds,
        lambda _limit: _too_large(max_bytes),
    ) as body:
        size = body.seek(0, 2)
        body.seek(0)
        form, files = _parse(body, size)
        try:
            upload, form_key = _checked_fields(form, files)
            key = _idempotency_key(form_key)
            stream: Any = upload.stream
            size, sha256 = _size_and_sha256(stream)
            if size > max_bytes:
                raise _too_large(max_bytes)
            if size == 0:
                raise EMPTY_FILE("The file is empty.")
            found = sniff(stream, upload.filename or "", values.attachments.types, values.attachments.image_max_pixels)
            meta = AttachmentMeta(
                attachment_id=new_id(ATTACHMENT_PREFIX, conversation_id),
                conversation_id=conversation_id,
                name=display_name(upload.filename, found.type),
                type=found.type,
                size=size,
                sha256=sha256,
                created_at=time.time(),
                idempotency_key=key,
            )
            stored = _put(meta, stream, values.attachments.max_bytes_per_conversation)
        finally:
            for parts in files.values():
                for part in parts:
                    part.close()
    response = jsonify(stored.to_json())
    response.status_code = 201
    return response


def _put(meta: AttachmentMeta, stream: BinaryIO, budget: int) -> AttachmentMeta:
    store = attachment_store()
    try:
        stored, created = store.put(meta, stream, budget)
    except BudgetExceeded as full:
        raise ATTACHMENTS_BUDGET_EXCEEDED(
            f"This conversation's attachments may hold {full.limit} bytes together; "
            f"{full.used} are used. Delete one, or send a smaller file.",
            details={"limit": full.limit, "used": full.used},
        ) from None
    except StoreFull:
        raise ATTACHMENT_STORE_FULL(
            "The server has no room for more attachments right now. Try again later.",
            retry_after=STORE_FULL_RETRY_AFTER_SECONDS,
        ) from None
    except ConversationGone:
        raise NOT_FOUND(CONVERSATION_NOT_FOUND) from None
    if created and chat_service().store.get_conversation(meta.conversation_id) is None:
        # Deleted or expired while the upload was read: its attachments go with it.
        store.delete_conversation(meta.conversation_id)
        raise NOT_FOUND(CONVERSATION_NOT_FOUND)
    if not created and stored.sha256 != meta.sha256:
        raise REQUEST_ID_CONFLICT(
            "This idempotency key already uploaded another file in this conversation.",
            details={"attachment_id": stored.attachment_id},
        )
    return stored


def _download_headers(meta: AttachmentMeta) -> dict[str, str]:
    return {
        "Content-Type": MEDIA_TYPES[meta.type],
        "Content-Disposition": content_disposition(meta.name, inline=meta.type in IMAGE_TYPES),
        # The bytes are never sniffed into something else, and if opened as a document
        # they run in an opaque origin without scripts, forms or plugins (CSP3 §6.3.2.1).
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "sandbox",
        "Cross-Origin-Resource-Policy": "same-origin",
        "Cache-Control": "private, no-store",
        "Referrer-Policy": "no-referrer",
    }


@bp.get("/conversations/<conversation:conversation_id>/attachments/<attachment:attachment_id>")
def download_attachment(conversation_id: str, attachment_id: str) -> Response:
    authorize(conversation_id)
    return attachment_response(conversation_id, attachment_id)


def attachment_response(conversation_id: str, attachment_id: str) -> Response:
    """The attachment's bytes, served so that no browser runs them (module docstring), to
    whoever the caller has authorised: the visitor's token, or an agent holding the
    conversation (agents/api.py)."""
    store = attachment_store()
    meta = store.get(conversation_id, attachment_id)
    data = store.open(conversation_id, attachment_id) if meta is not None else None
    if meta is None or data is None:
        raise _not_found()
    response = Response(wrap_file(request.environ, data), headers=_download_headers(meta), direct_passthrough=True)
    response.content_length = meta.size
    return response


def sent_in_a_message(conversation_id: str, attachment_id: str) -> bool:
    """Whether a message of the conversation carried the attachment: a turn's (to the
    assistant) or a hand-off message's (to a person)."""
    if any(
        attachment.attachment_id == attachment_id
        for exchange in chat_service().store.exchanges(conversation_id)
        for attachment in exchange.attachments
    ):
        return True
    return any(
        file["attachment_id"] == attachment_id
        for message in services().handoff.messages(conversation_id)
        for file in message.get("attachments", ())
    )


@bp.delete("/conversations/<conversation:conversation_id>/attachments/<attachment:attachment_id>")
def delete_attachment(conversation_id: str, attachment_id: str) -> Response:
    authorize(conversation_id)
    store = attachment_store()
    if store.get(conversation_id, attachment_id) is None:
        raise _not_found()
    if sent_in_a_message(conversation_id, attachment_id):
        # Its message's history and a regenerate still read it: it goes with the conversation
        # ("Delete my conversation"), never from under a sent message.
        raise ATTACHMENT_IN_MESSAGE(
            "This file was sent with a message, so it stays with the conversation. "
            "Delete the conversation to remove it.",
        )
    if not store.delete(conversation_id, attachment_id):
        raise _not_found()
    return Response(status=204, headers={"Cache-Control": "no-store"})


def init_app(app: Flask) -> None:
    """The routes and their id converter (before the rules that name it)."""
    app.url_map.converters["attachment"] = AttachmentIdConverter
    LARGE_BODY_ENDPOINTS.add(f"{bp.name}.{upload_attachment.__name__}")
    app.register_blueprint(bp)


@bp.after_request
def _no_store(response: Response) -> Response:
    response.headers.setdefault("Cache-Control", "no-store")
    return response
