// The chat API client: every HTTP request of the panel (docs/protocol.md).
//
// An answer's stream is opened with fetch() (EventSource cannot POST) and
// followed by follow.js, through the standards-exact parser in sse.js (chat.js
// AnswerRun.loop). A connection that ends without a terminal event is resumed
// with Last-Event-ID from the model — never by re-POSTing a new request — with
// bounded backoff that honours `retry:`. Before the message id is known, the
// only way back is the same POST with the same request_id, which the server
// treats idempotently.

export class ApiError extends Error {
  constructor(status, body) {
    const error = body?.error || {};
    super(error.message || `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = error.code || 'http_error';
    this.retryAfter = 0;
  }
}

export function newRequestId() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
}

async function jsonOrNull(response) {
  try {
    return await response.json();
  } catch {
    return null; // no JSON body: the status says what happened
  }
}

// The ApiError of a refused request (a stream that is not one, too: follow.js `refusal`).
export async function errorFrom(response) {
  const error = new ApiError(response.status, await jsonOrNull(response));
  error.retryAfter = Number(response.headers.get('Retry-After')) || 0;
  return error;
}

// A confirm or dismiss is retried 3 times (after 0.5, 1, 2 s).
const ACTION_RETRIES = 3;
const ACTION_RETRY_BASE_MS = 500;
const pause = (milliseconds) => new Promise((resolve) => setTimeout(resolve, milliseconds));

export class ChatClient {
  constructor({ apiBase, faults = '' }) {
    this.apiBase = apiBase.replace(/\/$/, '');
    this.faults = faults;
    this.conversationId = '';
    this.token = '';
  }

  get conversationUrl() {
    return `${this.apiBase}/conversations/${this.conversationId}`;
  }

  messageUrl(messageId) {
    return `${this.conversationUrl}/messages/${messageId}`;
  }

  // With the embed's fault injection, which only message requests take
  // (docs/protocol.md, "Fault injection").
  headers(extra = {}) {
    const headers = { Authorization: `Bearer ${this.token}`, ...extra };
    if (this.faults) headers['X-Chat-Faults'] = this.faults;
    return headers;
  }

  actionHeaders(extra = {}) {
    return { Authorization: `Bearer ${this.token}`, ...extra };
  }

  async createConversation() {
    const response = await fetch(`${this.apiBase}/conversations`, { method: 'POST' });
    if (!response.ok) throw await errorFrom(response);
    const body = await response.json();
    this.conversationId = body.conversation_id;
    this.token = body.token;
    return body;
  }

  async history() {
    const response = await fetch(this.conversationUrl, { headers: this.headers() });
    if (!response.ok) throw await errorFrom(response);
    return (await response.json()).messages;
  }

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
  confirmAction(messageId, actionId, idempotencyKey) {
    return this.decideAction(messageId, actionId, 'confirm', { 'Idempotency-Key': idempotencyKey });
  }

  dismissAction(messageId, actionId) {
    return this.decideAction(messageId, actionId, 'dismiss', {});
  }

  // Retried on network errors, 5xx and `action_in_progress`. A 409 that says
  // what became of the action (confirmed elsewhere, dismissed) is an outcome,
  // not an error. Anything else rejects with ApiError.
  async decideAction(messageId, actionId, decision, extraHeaders) {
    const url = `${this.messageUrl(messageId)}/actions/${actionId}/${decision}`;
    const headers = this.actionHeaders(extraHeaders);
    for (let attempt = 0; ; attempt++) {
      const retryDelay = ACTION_RETRY_BASE_MS * 2 ** attempt;
      let response;
      try {
        response = await fetch(url, { method: 'POST', headers });
      } catch (error) {
        if (attempt >= ACTION_RETRIES) throw error;
        await pause(retryDelay);
        continue;
      }
      const body = await jsonOrNull(response);
      if (response.ok && body) return body;
      const error = body?.error;
      const retryable = response.status >= 500 || error?.code === 'action_in_progress';
      if (retryable && attempt < ACTION_RETRIES) {
        await pause(retryDelay);
        continue;
      }
      if (error?.details?.action) return error.details.action;
      throw new ApiError(response.status, body);
    }
  }

  // The conversation's actions as they stand (to restore them after a reload).
  async listActions() {
    const response = await fetch(`${this.conversationUrl}/actions`, {
      headers: this.actionHeaders(),
    });
    if (!response.ok) throw await errorFrom(response);
    return (await response.json()).actions || [];
  }
}
