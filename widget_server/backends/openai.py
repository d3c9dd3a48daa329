"""The `openai` backend: any OpenAI-compatible chat-completions API, streamed.

One request per answer: `POST <OPENAI_BASE_URL>/chat/completions` with
`stream: true`, the system prompt, the conversation's completed history and
the user's message. The provider answers with an event stream of
`chat.completion.chunk` objects ending with `data: [DONE]`; it is read with
the project's own standard parser (`widget_server.sse.EventStreamParser`),
and each `choices[0].delta.content` is yielded the moment it arrives. This
works with OpenAI, Ollama, vLLM, the llama.cpp server and LM Studio
(docs/backends.md, "OpenAI-compatible providers", gives their settings).

Cancellation. A cancel (or the time limit) sets the token; between chunks
the generator sees it, but a silent upstream (a slow first token, a model
still loading) sends no chunks to check between. So each answer has a
watcher that, once the token is set, shuts down the upstream socket: the
blocked read returns at once, the generator returns, and the request stops
costing. Each answer gets its own connection (no keep-alive), captured
when it is opened, so the watcher can close exactly that connection at any
point, even before the response headers arrive.

The API key comes from the environment variable OPENAI_API_KEY. It is sent
only as `Authorization: Bearer …`, and never logged, put in an error
detail, or shown by repr().
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import socket
import threading
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote, quote_plus

import httpx

from ..answer_parts import MAX_SOURCES, safe_url
from ..errors import ChatError, ErrorCode
from ..settings import ConfigError, Settings, setting
from ..settings.parsing import parse_float, parse_http_url, parse_int, parse_str, parse_temperature
from ..sse import EventStreamParser, ServerSentEvent
from .base import CancelToken, Progress, Source, Turn

log = logging.getLogger(__name__)

API_KEY_ENV = "OPENAI_API_KEY"

# How often the watcher looks at the cancel token (the token has no way to
# wait on two things at once). A cancel closes the upstream within this.
WATCH_INTERVAL = 0.1
# An error body is read up to this many bytes (for the log).
ERROR_BODY_LIMIT = 16 * 1024
# Upstream text quoted in a log detail is cut to this many characters.
DETAIL_LIMIT = 300

# User-facing sentences: safe, no internals, each naming the next step.
MISCONFIGURED_MESSAGE = (
    "The answer service isn't set up correctly, so it can't answer right now. "
    "Trying again won't help; please let the site's team know."
)
TOO_LONG_MESSAGE = (
    "This conversation is too long for the answer service. Start a new conversation, or send a shorter message."
)

ATTACHMENT_REFUSED_MESSAGE = (
    "The answer service could not take a file sent with this message. "
    "Send the question without it, or the file in another format."
)
# A 4xx about a file the turn carried: an image the model cannot see, a format or size the
# provider refuses (OpenAI: `invalid_image_format`, `image_parse_error`, "Invalid image", "does
# not support image input"; others word it alike).
_ATTACHMENT_REFUSAL = re.compile(r"image|file|attachment|pdf|multimodal|vision|content part", re.IGNORECASE)

# Error codes and types providers use for a rejected, filtered request.
_SAFETY_CODES = {"content_filter", "content_policy_violation", "content_filtered", "safety"}
_CONTEXT_CODES = {
    "context_length_exceeded",
    "string_above_max_length",
    "exceed_context_size_error",
    "context_window_exceeded",
}
_CONTEXT_MESSAGE = re.compile(
    r"maximum context length|context length|context window|context size|too many tokens|prompt is too long",
    re.IGNORECASE,
)
_QUOTA_CODES = {"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"}


class _Citations:
    """What an answer's deltas carry besides text (docs/backends.md, "Sources" and "Progress"):
    each `url_citation` annotation (a search model's: its `url` and `title`) whose http(s) URL
    was not cited before, as a Source numbered in order; each tool call, when its function's
    name first shows, as a Progress line. A provider's odd annotation is left out, never a
    reason to fail the answer."""

    def __init__(self) -> None:
        self.urls: set[str] = set()
        self.tool_calls: set[object] = set()

    def parts_of(self, delta: Mapping[str, Any]) -> Iterator[Source | Progress]:
        for annotation in delta.get("annotations") or ():
            if not isinstance(annotation, dict) or annotation.get("type") != "url_citation":
                continue
            citation = annotation.get("url_citation")
            url = citation.get("url") if isinstance(citation, dict) else None
            if not isinstance(url, str) or url in self.urls or len(self.urls) >= MAX_SOURCES or not safe_url(url):
                continue
            self.urls.add(url)
            title = citation.get("title") if isinstance(citation, dict) else None
            yield Source(str(len(self.urls)), title if isinstance(title, str) and title.strip() else url, url)
        for call in delta.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            index = call.get("index", 0) if isinstance(call, dict) else None
            if isinstance(name, str) and name.strip() and index not in self.tool_calls:
                self.tool_calls.add(index)
                yield Progress(f"Using {name.strip()}…")


class _Upstream:
    """One answer's upstream connection, which the cancel watcher can shut down.

    httpcore reports each connection it opens through the request's `trace`
    extension; the socket is kept here. `abort()` shuts it down (a shutdown,
    not a close: a close from another thread does not wake a blocked read,
    a shutdown does, under threads and under gevent alike).
    """

    _OPENED = (".connect_tcp.complete", ".connect_unix_socket.complete", ".start_tls.complete")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[Any] = []
        self.aborted = False

    def trace(self, name: str, info: Mapping[str, Any]) -> None:
        if name.endswith(self._OPENED):
            self.attach(info.get("return_value"))

    def attach(self, network_stream: Any) -> None:
        get = getattr(network_stream, "get_extra_info", None)
        sock = get("socket") if get is not None else None
        if sock is None:
            return
        with self._lock:
            if not self.aborted:
                self._sockets.append(sock)
                return
        _shutdown(sock)  # opened after the cancel: close it at once

    def abort(self) -> None:
        with self._lock:
            self.aborted = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _shutdown(sock)


def _shutdown(sock: Any) -> None:
    try:
        if isinstance(sock, socket.socket):
            # The plain socket's shutdown, also for a TLS socket: the TLS
            # one's own shutdown() drops its state under the reading thread.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        else:
            sock.shutdown(socket.SHUT_RDWR)
    except (OSError, ValueError):
        pass  # already closed


def _watch(cancel: CancelToken, done: threading.Event, upstream: _Upstream) -> None:
    while not done.is_set():
        if cancel.wait(WATCH_INTERVAL):
            if not done.is_set():
                upstream.abort()
            return


def _key_pattern(key: str) -> re.Pattern[str] | None:
    """Every form of `key` a provider may echo: the key in any letter case (an upper-cased
    echo reached the log once), URL-encoded (as `quote` and `quote_plus` write it, and
    every byte as `%XX`, hex digits in any case), and base64 (standard and URL-safe,
    padded or not), also inside a longer base64 text such as `Basic …` or `Bearer …`
    encoded whole: the key's bytes at each of the three offsets a 3-byte group allows."""
    if not key:
        return None
    data = key.encode("utf-8")
    exact = {re.escape(form) for form in (key, quote(key, safe=""), quote_plus(key))}
    exact.add("".join(f"%{byte:02x}" for byte in data))
    encoded: set[str] = set()
    for offset in range(3):
        full = base64.b64encode(b"\0" * offset + data).decode("ascii")
        # Only the characters made of the key's own bits: the first ones also hold the
        # padding bytes before it, the last one (a partial group) whatever follows it.
        core = full[(offset * 8 + 5) // 6 : ((offset + len(data)) * 8) // 6]
        if len(core) >= 4:
            encoded.update((core, core.replace("+", "-").replace("/", "_")))
    # Case-insensitive for the text forms; base64 is case-sensitive, so its forms are exact.
    text = "(?i:" + "|".join(sorted(exact, key=len, reverse=True)) + ")"
    b64 = "|".join(re.escape(form) for form in sorted(encoded, key=len, reverse=True))
    return re.compile(text + ("|" + b64 if b64 else ""))


class _KeyRedactingFilter(logging.Filter):
    """Removes live backends' keys from the HTTP client's own log records.

    httpcore logs each response's headers at DEBUG and httpx each request's URL at INFO:
    a provider or gateway that echoes the key in a header (a `Location`, say) would put
    it there. A logger's filter sees only the records of that very logger, so it is
    attached to each of theirs (`_CLIENT_LOGGERS`)."""

    def __init__(self) -> None:
        super().__init__()
        self.patterns: set[re.Pattern[str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if self.patterns:
            message = original = record.getMessage()
            for pattern in list(self.patterns):
                message = pattern.sub("[redacted]", message)
            if message != original:
                record.msg, record.args = message, None
        return True


_CLIENT_LOGGERS = ("httpx", "httpcore.connection", "httpcore.http11", "httpcore.http2", "httpcore.proxy")
_CLIENT_LOG_FILTER = _KeyRedactingFilter()
for _name in _CLIENT_LOGGERS:
    logging.getLogger(_name).addFilter(_CLIENT_LOG_FILTER)


def _retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date (RFC 9110 10.2.3)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    if seconds != seconds or seconds in (float("inf"), float("-inf")):
        return None
    return max(0.0, seconds)


def _error_fields(body: Any) -> tuple[str, str, str]:
    """(message, type, code) from an error body: OpenAI's {"error": {…}}, or the
    older vLLM shape with the fields at the top level; strings, possibly empty."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, str):
        error = {"message": error}
    if not isinstance(error, dict):
        error = body if isinstance(body, dict) else {}

    def text(key: str) -> str:
        value = error.get(key)
        return "" if value is None else str(value)

    return text("message"), text("type"), text("code")


@dataclass(frozen=True)
class OpenAISettings:
    """The `openai` backend's own settings; the API key is the environment variable
    OPENAI_API_KEY, never a setting (docs/backends.md)."""

    base_url: str = setting(
        "OPENAI_BASE_URL",
        parse_http_url,
        "https://api.openai.com/v1",
        "`openai` backend: the provider's base URL (…/v1); requests go to <base>/chat/completions.",
    )
    model: str = setting("OPENAI_MODEL", parse_str, "gpt-4o-mini", "`openai` backend: the model name sent upstream.")
    system_prompt: str = setting(
        "OPENAI_SYSTEM_PROMPT",
        parse_str,
        "",
        "`openai` backend: a system message sent first in every request (empty: none).",
    )
    temperature: float | None = setting(
        "OPENAI_TEMPERATURE",
        parse_temperature,
        None,
        "`openai` backend: sampling temperature 0–2 (empty: not sent, the provider's default).",
    )
    max_tokens: int = setting(
        "OPENAI_MAX_TOKENS",
        parse_int,
        0,
        "`openai` backend: most tokens an answer may have (0: not sent, the provider's default).",
        0,
        10_000_000,
    )
    timeout_seconds: float = setting(
        "OPENAI_TIMEOUT_SECONDS",
        parse_float,
        60.0,
        "`openai` backend: connect and read timeout for the upstream, the first token included.",
        0.1,
        3600,
    )
    inline_text_max_chars: int = setting(
        "OPENAI_INLINE_TEXT_MAX_CHARS",
        parse_int,
        100_000,
        "`openai` backend: the most characters of a plain-text or CSV attachment sent inline with the question; "
        "a longer file is cut there, and the model is told so.",
        1000,
        10_000_000,
    )


class OpenAIBackend:
    """Streams answers from an OpenAI-compatible `/chat/completions` endpoint."""

    name = "openai"
    settings_class = OpenAISettings

    def __init__(
        self,
        *,
        base_url: str = "https://api.openai.com/v1",
        model: str = "gpt-4o-mini",
        api_key: str = "",
        system_prompt: str = "",
        temperature: float | None = None,
        max_tokens: int = 0,
        timeout: float = 60.0,
        inline_text_max_chars: int = 100_000,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model = model
        self.system_prompt = system_prompt
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.inline_text_max_chars = inline_text_max_chars
        self.__api_key = api_key  # name-mangled; never logged, never in repr
        self.__key_pattern = _key_pattern(api_key)  # the key in every form `_redact` removes
        if self.__key_pattern is not None:
            # Out of the HTTP client's logs too, for as long as this backend lives.
            _CLIENT_LOG_FILTER.patterns.add(self.__key_pattern)
            weakref.finalize(self, _CLIENT_LOG_FILTER.patterns.discard, self.__key_pattern)
        # One client for every answer (thread-safe; one TLS context). No
        # keep-alive: each answer has its own connection, which a cancel can
        # shut down at any moment (see _Upstream). No pool limit: the server
        # already bounds the answers running at once.
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),
            follow_redirects=False,
        )

    def __repr__(self) -> str:
        key = "set" if self.__api_key else "not set"
        return f"OpenAIBackend(base_url={self.base_url!r}, model={self.model!r}, api_key={key})"

    @classmethod
    def from_settings(cls, settings: Settings, environ: Mapping[str, str] | None = None) -> OpenAIBackend:
        environ = os.environ if environ is None else environ
        own = settings.plugin(OpenAISettings)
        model = own.model
        if not model:
            raise ConfigError("OPENAI_MODEL: empty; set the model the provider serves, e.g. gpt-4o-mini or llama3.2")
        api_key = environ.get(API_KEY_ENV, "").strip()
        if api_key and (not api_key.isascii() or any(c.isspace() or not c.isprintable() for c in api_key)):
            # Never the value itself: this message is printed and logged.
            raise ConfigError(f"{API_KEY_ENV}: contains whitespace, control or non-ASCII characters")
        base_url = own.base_url
        host = httpx.URL(base_url).host
        if not api_key and host == "api.openai.com":
            raise ConfigError(
                f"{API_KEY_ENV}: not set; api.openai.com needs an API key "
                "(local servers such as Ollama or llama.cpp do not)"
            )
        backend = cls(
            base_url=base_url,
            model=model,
            api_key=api_key,
            system_prompt=own.system_prompt,
            temperature=own.temperature,
            max_tokens=own.max_tokens,
            timeout=own.timeout_seconds,
            inline_text_max_chars=own.inline_text_max_chars,
        )
        log.info("openai backend: %s, model %s, API key %s", backend.url, model, "set" if api_key else "not set")
        return backend

    # -- the request ----------------------------------------------------------

    def request_body(self, turn: Turn) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        if self.system_prompt:
            messages.append({"role": "system", "content": self.system_prompt})
        messages.extend({"role": role, "content": text} for role, text in turn.history)
        messages.append({"role": "user", "content": self.user_content(turn)})
        body: dict[str, Any] = {"model": self.model, "messages": messages, "stream": True}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens:
            body["max_tokens"] = self.max_tokens
        return body

    def user_content(self, turn: Turn) -> str | list[dict[str, Any]]:
        """The turn's text; with files, content parts (the Chat Completions API's "Content
        parts": `text`, `image_url`, `file`): its text, then each file introduced by its name
        and the visitor's description, as an image (a base64 `data:` URL), a PDF (`file_data`)
        or, for plain text and CSV, its text inline, cut at OPENAI_INLINE_TEXT_MAX_CHARS."""
        if not turn.attachments:
            return turn.text
        parts: list[dict[str, Any]] = []
        if turn.text:
            parts.append({"type": "text", "text": turn.text})
        for attachment in turn.attachments:
            data = attachment.read()
            label = f"Attached file: {attachment.name} ({attachment.type}, {attachment.size} bytes)"
            if attachment.description:
                label += f". The visitor describes it: {attachment.description}"
            if attachment.type in ("text", "csv"):
                text = data.decode("utf-8", errors="replace")
                if len(text) > self.inline_text_max_chars:
                    kept = self.inline_text_max_chars
                    label += f". Only its first {kept} of {len(text)} characters follow"
                    text = text[:kept]
                parts.append({"type": "text", "text": f"{label}:\n\n{text}"})
                continue
            parts.append({"type": "text", "text": label})
            data_url = f"data:{attachment.media_type};base64,{base64.b64encode(data).decode('ascii')}"
            if attachment.is_image:
                parts.append({"type": "image_url", "image_url": {"url": data_url}})
            else:  # pdf: the API's file part (filename and file_data)
                parts.append({"type": "file", "file": {"filename": attachment.name, "file_data": data_url}})
        return parts

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self.__api_key:
            headers["Authorization"] = f"Bearer {self.__api_key}"
        return headers

    def _redact(self, text: str, limit: int = DETAIL_LIMIT) -> str:
        """Provider text made fit for the log: on one line, the key removed in any case or
        encoding (`_key_pattern`), then cut to `limit` characters (after the removal, so a
        cut never leaves part of a key behind)."""
        text = text.replace("\r", " ").replace("\n", " ")
        if self.__key_pattern is not None:
            text = self.__key_pattern.sub("[redacted]", text)
        return text[:limit] + ("…" if len(text) > limit else "")

    # -- the stream -----------------------------------------------------------

    def stream(self, turn: Turn, cancel: CancelToken) -> Iterator[str | Source | Progress]:
        if cancel.cancelled:
            return
        upstream = _Upstream()
        done = threading.Event()
        watcher = threading.Thread(
            target=_watch, args=(cancel, done, upstream), name=f"openai-watch-{turn.message_id}", daemon=True
        )
        watcher.start()
        try:
            with self._client.stream(
                "POST",
                self.url,
                json=self.request_body(turn),
                headers=self._headers(),
                extensions={"trace": upstream.trace},
            ) as response:
                # Belt and braces: the connection was captured when opened.
                upstream.attach(response.extensions.get("network_stream"))
                if response.status_code != 200:
                    raise self._status_error(response, with_files=bool(turn.attachments))
                content_type = response.headers.get("content-type", "")
                if content_type and not content_type.lower().startswith("text/event-stream"):
                    raise self._not_a_stream(response, content_type)
                yield from self._deltas(response, turn, cancel)
        except httpx.TimeoutException as error:
            if cancel.cancelled:
                return
            raise ChatError(
                ErrorCode.TIMEOUT,
                f"upstream {self.url}: no answer within OPENAI_TIMEOUT_SECONDS={self.timeout:g} "
                f"({type(error).__name__})",
            ) from None
        except httpx.HTTPError as error:
            if cancel.cancelled:
                return  # our own shutdown interrupted the read
            raise ChatError(
                ErrorCode.NETWORK, f"upstream {self.url}: {type(error).__name__}: {self._redact(str(error))}"
            ) from None
        finally:
            done.set()  # the `with` above has closed the response (and the connection)

    def _deltas(self, response: httpx.Response, turn: Turn, cancel: CancelToken) -> Iterator[str | Source | Progress]:
        events: list[ServerSentEvent] = []
        parser = EventStreamParser(events.append)
        cited = _Citations()
        for chunk in response.iter_bytes():
            if cancel.cancelled:
                return
            parser.feed(chunk)
            pending, events[:] = events[:], []
            for event in pending:
                text, finish, delta = self._interpret(event, response)
                if delta:
                    yield from cited.parts_of(delta)
                if text:
                    yield text  # at once: the first words before the last exist
                if finish is not None:
                    self._finish(finish, turn)
                    return
                if cancel.cancelled:
                    return
        parser.end()
        if cancel.cancelled:
            return
        raise ChatError(ErrorCode.NETWORK, f"upstream {self.url}: the stream ended before `data: [DONE]`")

    def _finish(self, finish: str, turn: Turn) -> None:
        if finish == "content_filter":
            raise ChatError(
                ErrorCode.SAFETY, "upstream finish_reason content_filter: the provider's filter stopped the answer"
            )
        if finish == "length":
            # The answer is what was produced: it completes, cut at the limit.
            log.info(
                "message %s: the answer reached its token limit (finish_reason length; OPENAI_MAX_TOKENS=%s)",
                turn.message_id,
                self.max_tokens or "provider default",
            )

    def _interpret(
        self, event: ServerSentEvent, response: httpx.Response
    ) -> tuple[str, str | None, dict[str, Any] | None]:
        """(text to forward, finish reason or None, the choice's delta when it has more than
        text: annotations or tool calls) for one upstream event."""
        data = event.data
        if data.strip() == "[DONE]":
            return "", "[DONE]", None
        if not data.strip() and event.event != "error":
            return "", None, None  # an empty event: nothing to forward
        try:
            chunk = json.loads(data)
        except ValueError:
            raise ChatError(
                ErrorCode.PROVIDER, f"malformed upstream stream: a data line is not JSON: {self._redact(data, 80)!r}"
            ) from None
        if event.event == "error" or (isinstance(chunk, dict) and chunk.get("error")):
            raise self._classify(None, chunk, response.headers, where="in the stream")
        if not isinstance(chunk, dict):
            raise ChatError(ErrorCode.PROVIDER, "malformed upstream stream: a chunk is not a JSON object")
        choices = chunk.get("choices")
        if choices is None:
            if "usage" in chunk:
                return "", None, None  # a usage-only chunk (vLLM, include_usage)
            raise ChatError(ErrorCode.PROVIDER, "malformed upstream stream: a chunk has no `choices`")
        if not isinstance(choices, list):
            raise ChatError(ErrorCode.PROVIDER, "malformed upstream stream: `choices` is not a list")
        if not choices:
            return "", None, None  # usage-only, or Azure's prompt_filter_results chunk
        choice = next((c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0), None)
        if choice is None:
            raise ChatError(ErrorCode.PROVIDER, "malformed upstream stream: no choice with index 0")
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict):
            raise ChatError(ErrorCode.PROVIDER, "malformed upstream stream: `delta` is not an object")
        if delta.get("refusal"):
            raise ChatError(ErrorCode.SAFETY, "upstream refusal (delta.refusal)")
        content = delta.get("content")
        if content is None:
            content = ""
        elif not isinstance(content, str):
            raise ChatError(ErrorCode.PROVIDER, "malformed upstream stream: `delta.content` is not a string")
        finish = choice.get("finish_reason")
        more = delta if delta.get("annotations") or delta.get("tool_calls") else None
        return content, (str(finish) if finish is not None else None), more

    # -- failures -------------------------------------------------------------

    def _read_error_body(self, response: httpx.Response) -> tuple[Any, str]:
        """(parsed JSON or None, text) of an error body, bounded; never raises."""
        raw = b""
        try:
            for piece in response.iter_bytes():
                raw += piece
                if len(raw) >= ERROR_BODY_LIMIT:
                    break
        except httpx.HTTPError:
            pass
        text = raw[:ERROR_BODY_LIMIT].decode("utf-8", "replace")
        try:
            return json.loads(text), text
        except ValueError:
            return None, text

    def _status_error(self, response: httpx.Response, *, with_files: bool = False) -> ChatError:
        body, text = self._read_error_body(response)
        if body is None and text.strip():
            body = {"error": {"message": text.strip()}}
        error = self._classify(response.status_code, body, response.headers, where=f"HTTP {response.status_code}")
        if with_files and error.code is ErrorCode.VALIDATION and response.status_code in (400, 413, 415, 422):
            message, kind, code = _error_fields(body)
            if _ATTACHMENT_REFUSAL.search(f"{message} {kind} {code}") and not _CONTEXT_MESSAGE.search(message):
                # The provider refused a file of the turn: say so, not "the request".
                return ChatError(
                    ErrorCode.VALIDATION,
                    f"{error.detail}; the provider refused a file sent with the message",
                    user_message=ATTACHMENT_REFUSED_MESSAGE,
                )
        return error

    def _not_a_stream(self, response: httpx.Response, content_type: str) -> ChatError:
        body, _ = self._read_error_body(response)
        if isinstance(body, dict) and "error" in body:
            return self._classify(None, body, response.headers, where="with HTTP 200")
        return ChatError(
            ErrorCode.PROVIDER,
            f"upstream answered HTTP 200 with {self._redact(content_type)!r}, not an event stream "
            "(does the server support stream=true at this URL?)",
        )

    def _classify(self, status: int | None, body: Any, headers: httpx.Headers, *, where: str) -> ChatError:
        message, kind, code = _error_fields(body)
        names = {kind.lower(), code.lower()} - {""}
        retry_after = _retry_after(headers.get("retry-after")) if status is not None else None
        facts = [f"upstream error {where}"]
        if kind:
            facts.append(f"type={self._redact(kind)}")
        if code:
            facts.append(f"code={self._redact(code)}")
        if retry_after is not None:
            facts.append(f"Retry-After {retry_after:g} s")
        if status is not None and 300 <= status < 400 and headers.get("location"):
            facts.append(f"Location {self._redact(headers['location'])!r}")
        if message and status not in (401, 403):
            # 401/403 messages may echo (part of) the key: never quoted.
            facts.append(f"message={self._redact(message)!r}")
        detail = ", ".join(facts)

        def error(code_: ErrorCode, hint: str = "", **kwargs: Any) -> ChatError:
            return ChatError(code_, detail + (f"; {hint}" if hint else ""), **kwargs)

        if status in (401, 403):
            return error(
                ErrorCode.PROVIDER,
                f"check {API_KEY_ENV} and its permissions",
                user_message=MISCONFIGURED_MESSAGE,
                retryable=False,
            )
        if status == 404:
            return error(
                ErrorCode.PROVIDER,
                "check OPENAI_BASE_URL (…/v1) and OPENAI_MODEL",
                user_message=MISCONFIGURED_MESSAGE,
                retryable=False,
            )
        if names & _SAFETY_CODES or any("content_filter" in name for name in names):
            return error(ErrorCode.SAFETY)
        if names & _CONTEXT_CODES or (
            (status in (400, 413, 422) or status is None) and _CONTEXT_MESSAGE.search(message)
        ):
            return error(
                ErrorCode.VALIDATION, "the conversation exceeds the model's context", user_message=TOO_LONG_MESSAGE
            )
        if names & _QUOTA_CODES:
            return error(
                ErrorCode.PROVIDER,
                "the account's quota or billing stops every request",
                user_message=MISCONFIGURED_MESSAGE,
                retryable=False,
            )
        if status == 429 or "rate_limit" in code.lower() or "rate_limit" in kind.lower():
            user_message = None
            if retry_after is not None and 1 <= retry_after <= 600:
                user_message = f"The answer service is busy right now. Nothing was saved; try again in {round(retry_after)} seconds."
            return error(ErrorCode.PROVIDER, "rate limited", user_message=user_message, retryable=True)
        if status == 408:
            return error(ErrorCode.TIMEOUT)
        if status in (400, 413, 422):
            return error(ErrorCode.VALIDATION, "the provider rejected the request")
        if status is None or status >= 500:
            # 500, 502, 503 (overloaded), 504, 529 (overloaded), or an error
            # event in the middle of the stream.
            return error(ErrorCode.PROVIDER, retryable=True)
        # Anything else (a redirect, 405, 410…) means the URL is wrong.
        return error(
            ErrorCode.PROVIDER,
            "unexpected status: check OPENAI_BASE_URL",
            user_message=MISCONFIGURED_MESSAGE,
            retryable=False,
        )
