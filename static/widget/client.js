// The chat API client: every HTTP request of the panel (docs/protocol.md), and the only module
// of static/widget/ that makes one (tests/test_architecture.py): the other modules call its
// methods, and follow.js reads the responses their `request` gets from here.
//
// An answer's stream is opened with fetch() (EventSource cannot POST) and
// followed by follow.js, through the standards-exact parser in sse.js (chat.js
// AnswerRun.loop). A connection that ends without a terminal event is resumed
// with Last-Event-ID from the model — never by re-POSTing a new request — with
// bounded backoff that honours `retry:`. Before the message id is known, the
// only way back is the same POST with the same request_id, which the server
// treats idempotently.

import { sleep } from './dom.js';
import { ERROR, HTTP_ERROR_CODE } from './protocol.js';

// -- the wire's shapes (docs/protocol.md), as this client resolves to them ------------------

/**
 * A refusal's JSON body (docs/protocol.md, "HTTP errors").
 * @typedef {object} ErrorBody
 * @property {{ code?: string, message?: string, details?: Record<string, any> }} [error]
 */

/**
 * A new conversation (`POST /conversations`).
 * @typedef {{ conversation_id: string, token: string }} NewConversation
 */

/**
 * A conversation of a known visitor's list (`GET /me/conversations`, docs/protocol.md).
 * @typedef {object} OwnConversation
 * @property {string} conversation_id
 * @property {string} title
 * @property {string} created_at
 * @property {string} last_activity
 * @property {string} state
 */

/**
 * A stored attachment (`POST …/attachments`; a user entry's `attachments` in the history).
 * @typedef {object} Attachment
 * @property {string} attachment_id
 * @property {string} name
 * @property {string} type `png`, `jpeg`, `webp`, `gif`, `pdf`, `text` or `csv`
 * @property {number} size
 * @property {string} sha256
 * @property {string} [description] An image's text alternative, when the visitor gave one.
 */

/**
 * An attachment as a message carries it: its id, or its id with a description.
 * @typedef {string | { attachment_id: string, description?: string }} AttachmentRef
 */

/**
 * An answer's feedback record (docs/protocol.md, "Feedback").
 * @typedef {{ rating: 'up' | 'down', comment?: string | null, updated_at?: string }} Feedback
 */

/**
 * One entry of the history (docs/protocol.md, "History"): a user message, an answer, or a
 * hand-off's message (`visitor`, or `agent` with the person's display name).
 * @typedef {object} HistoryMessage
 * @property {string} message_id
 * @property {'user' | 'assistant' | 'visitor' | 'agent'} role
 * @property {string} state
 * @property {string} text
 * @property {Attachment[]} [attachments]
 * @property {Feedback | null} [feedback] Answers only.
 * @property {string} [agent] Agent messages only.
 * @property {import('./model.js').Source[]} [sources] Completed answers that cite sources.
 */

/**
 * A message's state (`POST …/cancel`).
 * @typedef {object} MessageState
 * @property {string} message_id
 * @property {string} state
 * @property {number} last_seq
 * @property {import('./model.js').AnswerError} [error] `failed` only.
 */

/**
 * A proposed action as it stands (docs/protocol.md, "Actions").
 * @typedef {object} Action
 * @property {string} action_id
 * @property {string} message_id
 * @property {string} name
 * @property {string} label
 * @property {string} description
 * @property {Record<string, any>} arguments
 * @property {'proposed' | 'executing' | 'succeeded' | 'failed' | 'dismissed'} status
 * @property {any} [result] `succeeded`: what the action returned.
 * @property {{ code: string, message: string }} [error] `failed`: a safe sentence.
 */

/**
 * Where a hand-off stands (`POST …/handoff`): queued with a position, assigned to an agent,
 * or unavailable for a reason (`opens_at` with `closed`).
 * @typedef {object} HandoffState
 * @property {'queued' | 'assigned' | 'unavailable'} state
 * @property {number} seq
 * @property {number} [position]
 * @property {string} [agent]
 * @property {'no_agents' | 'disabled' | 'closed' | 'busy'} [reason]
 * @property {string} [opens_at]
 */

/**
 * What an answer's stream is opened with: a new message (`requestId`, `text`), or another
 * POST (`url` and its `body`: regenerate, edit; a message with files).
 * @typedef {object} SendRequest
 * @property {string} requestId
 * @property {string} [text]
 * @property {string} [url] Default: the conversation's messages.
 * @property {Record<string, any>} [body] Default: `{ request_id, text }`.
 */

/** A refused request: the server's `code` (or `http_error`), its status, its Retry-After. */
export class ApiError extends Error {
  /**
   * @param {number} status 0: no answer came (offline, a cut connection, an abort).
   * @param {ErrorBody | null} body
   */
  constructor(status, body) {
    const error = body?.error || {};
    super(error.message || `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = error.code || HTTP_ERROR_CODE;
    /** @type {Record<string, any>} the error's `details` ({} when it has none) */
    this.details = error.details || {};
    this.retryAfter = 0;
  }
}

/** @returns {string} */
export function newRequestId() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/**
 * The JSON of a response, or null when it has none (the agents' console reads its own with it).
 * @param {Response} response
 * @returns {Promise<any>}
 */
export async function jsonOrNull(response) {
  try {
    return await response.json();
  } catch {
    return null; // no JSON body: the status says what happened
  }
}

/**
 * The ApiError of a refused request (a stream that is not one, too: follow.js `refusal`).
 * @param {Response} response
 * @returns {Promise<ApiError>}
 */
export async function errorFrom(response) {
  const error = new ApiError(response.status, await jsonOrNull(response));
  error.retryAfter = Number(response.headers.get('Retry-After')) || 0;
  return error;
}

// A JSON file the panel's folder serves (the lazy parts' strings, lazy-parts.js); a refusal
// rejects with its status.
/**
 * @param {string} url
 * @returns {Promise<any>}
 */
export function staticJson(url) {
  return fetch(url).then((response) =>
    response.ok ? response.json() : Promise.reject(response.status),
  );
}

// An action's confirm or dismiss, a visitor's message to a person: retried 3 times (after 0.5,
// 1, 2 s).
const RETRIES = 3;
const RETRY_BASE_MS = 500;

export class ChatClient {
  /**
   * @param {{ apiBase: string, faults?: string }} options `faults`: the embed's fault
   *   injection (docs/protocol.md, "Fault injection").
   */
  constructor({ apiBase, faults = '' }) {
    this.apiBase = apiBase.replace(/\/$/, '');
    this.faults = faults;
    this.conversationId = '';
    this.token = '';
    // A known visitor's identity token (identity.js; docs/protocol.md, "Known visitors"): sent
    // with a new conversation, and the Bearer of one from the visitor's list, which has no
    // token of its own here ('' token); a conversation created here keeps its own token.
    this.identity = '';
  }

  get bearer() {
    return `Bearer ${this.token || this.identity}`;
  }

  get conversationUrl() {
    return `${this.apiBase}/conversations/${this.conversationId}`;
  }

  /** @param {string} messageId */
  messageUrl(messageId) {
    return `${this.conversationUrl}/messages/${messageId}`;
  }

  // With the embed's fault injection, which only message requests take
  // (docs/protocol.md, "Fault injection").
  /**
   * @param {Record<string, string>} [extra]
   * @returns {Record<string, string>}
   */
  headers(extra = {}) {
    /** @type {Record<string, string>} */
    const headers = { Authorization: this.bearer, ...extra };
    if (this.faults) headers['X-Chat-Faults'] = this.faults;
    return headers;
  }

  /**
   * The token alone: every request that takes no fault injection.
   * @param {Record<string, string>} [extra]
   * @returns {Record<string, string>}
   */
  tokenHeaders(extra = {}) {
    return { Authorization: this.bearer, ...extra };
  }

  // A request with the token and a JSON `body`, if any. Resolves to the response; a refusal
  // rejects with its ApiError unless its status is one of `accepted`.
  /**
   * @param {string} method
   * @param {string} url
   * @param {object} [body]
   * @param {number[]} [accepted]
   * @returns {Promise<Response>}
   */
  async requestWithToken(method, url, body, accepted = []) {
    const response = await fetch(url, {
      method,
      headers: this.tokenHeaders(body ? { 'Content-Type': 'application/json' } : {}),
      body: body ? JSON.stringify(body) : undefined,
    });
    if (!response.ok && !accepted.includes(response.status)) throw await errorFrom(response);
    return response;
  }

  // A client of this conversation that stays with it when the panel moves on to another (a
  // start-over, another tab's conversation): the hand-off's (handoff.js), whose end is sent to
  // the conversation it began in.
  /** @returns {ChatClient} */
  pinned() {
    return Object.assign(new ChatClient(this), {
      conversationId: this.conversationId,
      token: this.token,
      identity: this.identity,
    });
  }

  /**
   * @param {{ consent_sha256: string }} [consent] the visitor's agreement (consent.js), if asked
   * @returns {Promise<NewConversation>}
   */
  async createConversation(consent) {
    // A known visitor's conversation is theirs (their list, their other devices); with neither
    // an identity nor a consent: no body.
    const sent = this.identity ? { ...consent, identity_token: this.identity } : consent;
    const response = await fetch(`${this.apiBase}/conversations`, {
      method: 'POST',
      ...(sent && {
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(sent),
      }),
    });
    if (!response.ok) throw await errorFrom(response);
    const body = await response.json();
    this.conversationId = body.conversation_id;
    this.token = body.token;
    return body;
  }

  // A known visitor's conversations, most recent first (docs/protocol.md, "Known visitors").
  /** @returns {Promise<OwnConversation[]>} */
  async ownConversations() {
    const response = await fetch(`${this.apiBase}/me/conversations`, {
      headers: { Authorization: `Bearer ${this.identity}` },
    });
    if (!response.ok) throw await errorFrom(response);
    return (await response.json()).conversations;
  }

  /** @returns {Promise<HistoryMessage[]>} */
  async history() {
    const response = await fetch(this.conversationUrl, { headers: this.headers() });
    if (!response.ok) throw await errorFrom(response);
    return (await response.json()).messages;
  }

  /**
   * @param {string} messageId
   * @returns {Promise<MessageState>}
   */
  async cancel(messageId) {
    const response = await fetch(`${this.messageUrl(messageId)}/cancel`, {
      method: 'POST',
      headers: this.headers(),
    });
    if (!response.ok) throw await errorFrom(response);
    return response.json();
  }

  // Tell the server what this client repaired on a message's streams (it
  // counts them in /metrics). Best effort: a lost report loses nothing.
  /**
   * @param {string} messageId
   * @param {{ duplicates: number, dropped: number }} repairs
   * @returns {Promise<void>}
   */
  async report(messageId, { duplicates, dropped }) {
    const response = await fetch(`${this.messageUrl(messageId)}/report`, {
      method: 'POST',
      headers: this.headers({ 'Content-Type': 'application/json' }),
      body: JSON.stringify({ duplicates, dropped }),
      keepalive: true,
    });
    if (!response.ok) throw await errorFrom(response);
  }

  // One read's HTTP exchange, for follow.js: POST (send) or GET (resume), `headers` holding
  // its Last-Event-ID. Resolves to the response; follow.js reads its body.
  /**
   * @param {object} read
   * @param {SendRequest | null} [read.send] The message to send (a POST); else a resume (a GET).
   * @param {string} [read.messageId] The answer to resume.
   * @param {Record<string, string>} read.headers
   * @param {boolean} [read.snapshot] Ask for a snapshot (a gap was seen).
   * @param {AbortSignal} read.signal
   * @returns {Promise<Response>}
   */
  openStream({ send, messageId, headers: resume, snapshot, signal }) {
    if (send) {
      // Regenerate and edit (answer-tools.js) post elsewhere.
      return fetch(send.url || `${this.conversationUrl}/messages`, {
        method: 'POST',
        headers: this.headers({ 'Content-Type': 'application/json', ...resume }),
        body: JSON.stringify(send.body || { request_id: send.requestId, text: send.text }),
        signal,
      });
    }
    const query = snapshot ? '?snapshot=1' : '';
    return fetch(`${this.messageUrl(messageId)}/events${query}`, {
      headers: this.headers(resume),
      signal,
    });
  }

  // -- actions (docs/protocol.md, "Actions") --------------------------------

  // The caller makes the key once per action and reuses it on every retry:
  // the server runs the action at most once. Resolves to the action as it
  // stands (a `failed` outcome is not an error).
  /**
   * @param {string} messageId
   * @param {string} actionId
   * @param {string} idempotencyKey
   * @returns {Promise<Action>}
   */
  confirmAction(messageId, actionId, idempotencyKey) {
    return this.decideAction(messageId, actionId, 'confirm', { 'Idempotency-Key': idempotencyKey });
  }

  /**
   * @param {string} messageId
   * @param {string} actionId
   * @returns {Promise<Action>}
   */
  dismissAction(messageId, actionId) {
    return this.decideAction(messageId, actionId, 'dismiss', {});
  }

  // Retried on network errors, 5xx and `action_in_progress`. A 409 that says
  // what became of the action (confirmed elsewhere, dismissed) is an outcome,
  // not an error. Anything else rejects with ApiError.
  /**
   * @param {string} messageId
   * @param {string} actionId
   * @param {'confirm' | 'dismiss'} decision
   * @param {Record<string, string>} extraHeaders
   * @returns {Promise<Action>}
   */
  async decideAction(messageId, actionId, decision, extraHeaders) {
    const url = `${this.messageUrl(messageId)}/actions/${actionId}/${decision}`;
    const headers = this.tokenHeaders(extraHeaders);
    for (let attempt = 0; ; attempt++) {
      const retryDelay = RETRY_BASE_MS * 2 ** attempt;
      let response;
      try {
        response = await fetch(url, { method: 'POST', headers });
      } catch (error) {
        if (attempt >= RETRIES) throw error;
        await sleep(retryDelay);
        continue;
      }
      const body = await jsonOrNull(response);
      if (response.ok && body) return body;
      const error = body?.error;
      const retryable = response.status >= 500 || error?.code === ERROR.ACTION_IN_PROGRESS.code;
      if (retryable && attempt < RETRIES) {
        await sleep(retryDelay);
        continue;
      }
      if (error?.details?.action) return error.details.action;
      throw new ApiError(response.status, body);
    }
  }

  /**
   * The conversation's actions as they stand (to restore them after a reload).
   * @returns {Promise<Action[]>}
   */
  async listActions() {
    const response = await this.requestWithToken('GET', `${this.conversationUrl}/actions`);
    return (await response.json()).actions || [];
  }

  // -- the conversation --------------------------------------------------------------------

  // Its 204 also expires the panel's conversation cookie; a 404 is a conversation already gone.
  /** @returns {Promise<Response>} */
  deleteConversation() {
    return this.requestWithToken('DELETE', this.conversationUrl, undefined, [404]);
  }

  // An answer's one feedback record (docs/protocol.md, "Feedback"): a rating, or a rating and
  // a comment; taken back by deleting it.
  /**
   * @param {string} messageId
   * @param {{ rating: 'up' | 'down', comment?: string | null }} feedback
   * @returns {Promise<Response>}
   */
  putFeedback(messageId, feedback) {
    return this.requestWithToken('PUT', `${this.messageUrl(messageId)}/feedback`, feedback);
  }

  /**
   * @param {string} messageId
   * @returns {Promise<Response>}
   */
  deleteFeedback(messageId) {
    return this.requestWithToken('DELETE', `${this.messageUrl(messageId)}/feedback`);
  }

  // -- attachments (docs/protocol.md, "Attachments") ---------------------------------------

  // XMLHttpRequest, not fetch: its upload's progress events are the real progress of the bytes
  // sent, given to `onProgress` as a fraction. The key is made once per file and reused on a
  // retry: the server stores it once. Resolves to the stored attachment; rejects with an
  // ApiError, status 0 when no answer came (offline, a cut connection, `signal` aborted).
  /**
   * @param {Blob} file
   * @param {string} name
   * @param {string} idempotencyKey
   * @param {{ onProgress?: (fraction: number) => void, signal?: AbortSignal }} [options]
   * @returns {Promise<Attachment>}
   */
  uploadAttachment(file, name, idempotencyKey, { onProgress, signal } = {}) {
    return new Promise((resolve, reject) => {
      const request = new XMLHttpRequest();
      request.open('POST', `${this.conversationUrl}/attachments`);
      request.setRequestHeader('Authorization', this.bearer);
      request.setRequestHeader('Idempotency-Key', idempotencyKey);
      request.responseType = 'json';
      request.upload.addEventListener('progress', (event) => {
        if (event.lengthComputable) onProgress?.(event.loaded / event.total);
      });
      request.addEventListener('load', () => {
        if (request.status === 201 && request.response) return resolve(request.response);
        const error = new ApiError(request.status, request.response);
        error.retryAfter = Number(request.getResponseHeader('Retry-After')) || 0;
        reject(error);
      });
      request.addEventListener('error', () => reject(new ApiError(0, null)));
      request.addEventListener('abort', () => reject(new ApiError(0, null)));
      signal?.addEventListener('abort', () => request.abort(), { once: true });
      const form = new FormData();
      form.append('file', file, name);
      request.send(form);
    });
  }

  // An attachment's bytes (a thumbnail's, shown from a blob: URL).
  /**
   * @param {string} attachmentId
   * @returns {Promise<Blob>}
   */
  async attachmentBlob(attachmentId) {
    const url = `${this.conversationUrl}/attachments/${attachmentId}`;
    return (await this.requestWithToken('GET', url)).blob();
  }

  // Uploaded but never sent: the server frees its bytes.
  /**
   * @param {string} attachmentId
   * @returns {Promise<Response>}
   */
  deleteAttachment(attachmentId) {
    return this.requestWithToken('DELETE', `${this.conversationUrl}/attachments/${attachmentId}`);
  }

  // -- hand-off to a person (docs/protocol.md, "Hand-off to a person") ---------------------

  // Resolves to the server's word: queued, assigned or unavailable.
  /**
   * @param {string} requestId
   * @returns {Promise<HandoffState>}
   */
  async requestHandoff(requestId) {
    const url = `${this.conversationUrl}/handoff`;
    return (await this.requestWithToken('POST', url, { request_id: requestId })).json();
  }

  /**
   * A 404 or 409: no hand-off to end any more.
   * @returns {Promise<Response>}
   */
  cancelHandoff() {
    return this.requestWithToken(
      'DELETE',
      `${this.conversationUrl}/handoff`,
      undefined,
      [404, 409],
    );
  }

  // One read of the conversation's event stream, for follow.js: the events after `after`,
  // `headers` holding its Last-Event-ID. Resolves to the response; follow.js reads its body.
  /**
   * @param {{ after: number, headers: Record<string, string>, signal: AbortSignal }} read
   * @returns {Promise<Response>}
   */
  conversationEvents({ after, headers, signal }) {
    return fetch(`${this.conversationUrl}/events?after=${after}`, {
      headers: this.tokenHeaders(headers),
      signal,
    });
  }

  // A visitor's message to the person ({request_id, text, attachments?}: the same request id on
  // every try, so it is stored once), retried on network errors and 5xx. Resolves to the
  // stored message ({message_id, sha256}); anything else rejects with ApiError.
  /**
   * @param {{ request_id: string, text: string, attachments?: AttachmentRef[] }} message
   * @returns {Promise<{ message_id: string, sha256: string }>}
   */
  async sendHandoffMessage(message) {
    const url = `${this.conversationUrl}/handoff/messages`;
    for (let attempt = 0; ; attempt++) {
      let response;
      try {
        response = await this.requestWithToken('POST', url, message);
      } catch (error) {
        if ((error instanceof ApiError && error.status < 500) || attempt >= RETRIES) throw error;
        await sleep(RETRY_BASE_MS * 2 ** attempt);
        continue;
      }
      return response.json();
    }
  }

  // The leave-a-message form's message ({request_id, text, email?}).
  /**
   * @param {{ request_id: string, text: string, email?: string }} message
   * @returns {Promise<Response>}
   */
  leaveMessage(message) {
    return this.requestWithToken('POST', `${this.conversationUrl}/handoff/left-messages`, message);
  }
}
