// The chat API client: conversations, sending, and a resumable stream.
//
// The stream is read from fetch() (EventSource cannot POST) through the
// standards-exact parser in sse.js. A connection that ends without a
// terminal event is resumed with Last-Event-ID from the model — never by
// re-POSTing a new request — with bounded backoff that honours `retry:`.
// Before the message id is known, the only way back is the same POST with
// the same request_id, which the server treats idempotently.

import { createEventStreamParser } from './sse.js';

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = error.code || 'http_error';
    this.retryAfter = 0;
  }
}

export function newRequestId() {
  if (globalThis.crypto && crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

async function errorFrom(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  const error = new ApiError(response.status, body);
  error.retryAfter = Number(response.headers.get('Retry-After')) || 0;
  return error;
}

export class ChatClient {
  constructor({ apiBase, faults = '' }) {
    this.apiBase = apiBase.replace(/\/$/, '');
    this.faults = faults;
    this.conversationId = '';
    this.token = '';
  }

  headers(extra = {}) {
    const headers = { Authorization: `Bearer ${this.token}`, ...extra };
    if (this.faults) headers['X-Chat-Faults'] = this.faults;
    return headers;
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
    const response = await fetch(`${this.apiBase}/conversations/${this.conversationId}`, {
      headers: this.headers(),
    });
    if (!response.ok) throw await errorFrom(response);
    return (await response.json()).messages;
  }

  async cancel(messageId) {
    const url = `${this.apiBase}/conversations/${this.conversationId}/messages/${messageId}/cancel`;
    const response = await fetch(url, { method: 'POST', headers: this.headers() });
    if (!response.ok) throw await errorFrom(response);
    return response.json();
  }

  // Tell the server what this client repaired on a message's streams (it
  // counts them in /metrics). Best effort: a lost report loses nothing.
  async report(messageId, { duplicates, dropped }) {
    const url = `${this.apiBase}/conversations/${this.conversationId}/messages/${messageId}/report`;
    const headers = this.headers({ 'Content-Type': 'application/json' });
    const response = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ duplicates, dropped }),
      keepalive: true,
    });
    if (!response.ok) throw await errorFrom(response);
  }

  // One HTTP exchange: POST (send) or GET (resume). Calls onEvent(type, data)
  // per event; resolves when the body ends (or is aborted). Rejects with
  // ApiError for a non-stream response.
  async readOnce({ send, messageId, lastEventId, snapshot, signal, onEvent, onBytes }) {
    const conversation = `${this.apiBase}/conversations/${this.conversationId}`;
    let response;
    if (send) {
      const headers = this.headers({ 'Content-Type': 'application/json' });
      if (lastEventId) headers['Last-Event-ID'] = lastEventId;
      response = await fetch(`${conversation}/messages`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ request_id: send.requestId, text: send.text }),
        signal,
      });
    } else {
      const headers = this.headers(lastEventId ? { 'Last-Event-ID': lastEventId } : {});
      const query = snapshot ? '?snapshot=1' : '';
      response = await fetch(`${conversation}/messages/${messageId}/events${query}`, {
        headers,
        signal,
      });
    }
    const type = response.headers.get('Content-Type') || '';
    if (!response.ok || !type.startsWith('text/event-stream')) throw await errorFrom(response);
    const parser = createEventStreamParser((event) => {
      let data;
      try {
        data = JSON.parse(event.data);
      } catch {
        return; // not one of ours; the model ignores what it cannot place
      }
      onEvent(event.type, data);
    });
    const reader = response.body.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        if (onBytes) onBytes();
        parser.feed(value);
      }
      parser.end();
    } finally {
      reader.releaseLock();
    }
    return { retry: parser.retry };
  }
}
