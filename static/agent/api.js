// The agent API client: every HTTP request of the console (docs/agents.md, "The agent API").
// The session is the `__Host-agent_session` cookie the browser sends by itself (same
// origin); every state-changing request also carries the session's CSRF token in
// `X-CSRF-Token`. Errors are the server's JSON errors, as the widget's client reads them
// (static/widget/client.js ApiError: status, code, message), plus `details`.

import { ApiError, newRequestId } from '../widget/client.js';
import { createEventStreamParser } from '../widget/sse.js';

export { ApiError, newRequestId };

async function jsonOrNull(response) {
  try {
    return await response.json();
  } catch {
    return null; // no JSON body (a 204): the status says what happened
  }
}

export class AgentApi {
  constructor({ apiBase, csrfToken }) {
    this.apiBase = apiBase.replace(/\/$/, '');
    this.csrfToken = csrfToken;
  }

  async request(method, path, body) {
    const headers = {};
    if (method !== 'GET') headers['X-CSRF-Token'] = this.csrfToken;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const response = await fetch(`${this.apiBase}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
      cache: 'no-store',
    });
    const json = await jsonOrNull(response);
    if (!response.ok) {
      const error = new ApiError(response.status, json);
      error.details = json?.error?.details || {};
      throw error;
    }
    return json;
  }

  queue() {
    return this.request('GET', '/queue');
  }

  conversation(conversationId) {
    return this.request('GET', `/conversations/${conversationId}`);
  }

  claim(conversationId) {
    return this.request('POST', `/conversations/${conversationId}/claim`);
  }

  // The request id is made once per reply by the caller and reused on a retry: the server
  // stores the message once (docs/design.md, "Every message has an identity").
  reply(conversationId, requestId, text) {
    return this.request('POST', `/conversations/${conversationId}/messages`, {
      request_id: requestId,
      text,
    });
  }

  typing(conversationId) {
    return this.request('POST', `/conversations/${conversationId}/typing`);
  }

  end(conversationId, reason) {
    return this.request('POST', `/conversations/${conversationId}/end`, { reason });
  }

  // A page of left messages, newest first; `cursor`, a page's next_cursor (docs/agents.md,
  // "The inbox").
  inbox({ limit, cursor } = {}) {
    const query = new URLSearchParams();
    if (limit) query.set('limit', String(limit));
    if (cursor) query.set('cursor', cursor);
    const search = query.toString();
    return this.request('GET', search ? `/inbox?${search}` : '/inbox');
  }

  replyToLeft(leftMessageId, requestId, text) {
    return this.request('POST', `/inbox/${leftMessageId}/reply`, { request_id: requestId, text });
  }
}

const pause = (milliseconds, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, milliseconds);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

// A conversation's event stream (docs/protocol.md, "The conversation event stream"), read
// with fetch and the widget's standards-exact parser (static/widget/sse.js), resumed after a
// drop with Last-Event-ID (`<conversation_id>:<seq>`), so nothing is missed or repeated; the
// server sends a `conversation.snapshot` when that position has left its log. `onEvent(type,
// data, id)` runs per event; `onState('open' | 'lost')` when the connection changes.
// `close()` ends it for good.
export function followConversation(
  apiBase,
  conversationId,
  { lastEventId = '', onEvent, onState, maxBackoffMs = 8000 },
) {
  const controller = new AbortController();
  const url = `${apiBase.replace(/\/$/, '')}/conversations/${conversationId}/events`;
  const parser = createEventStreamParser((event) => {
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      return; // not one of ours
    }
    onEvent(event.type, data, event.id);
  });
  let resumeFrom = lastEventId;

  async function loop() {
    let failures = 0;
    while (!controller.signal.aborted) {
      try {
        const id = parser.lastEventId || resumeFrom;
        const response = await fetch(url, {
          headers: id ? { 'Last-Event-ID': id } : {},
          credentials: 'same-origin',
          cache: 'no-store',
          signal: controller.signal,
        });
        const type = response.headers.get('Content-Type') || '';
        if (!response.ok || !type.startsWith('text/event-stream')) {
          const error = new ApiError(response.status, await jsonOrNull(response));
          // Not ours to follow any more (ended, claimed by someone else) or signed out:
          // reconnecting would only be refused again.
          if ([401, 403, 404].includes(response.status)) {
            onState('closed', error);
            return;
          }
          throw error;
        }
        onState('open');
        failures = 0;
        const reader = response.body.getReader();
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            parser.feed(value);
          }
          parser.end();
        } finally {
          reader.releaseLock();
        }
      } catch (error) {
        if (controller.signal.aborted) return;
        parser.reset();
        failures += 1;
        if (failures === 1) onState('lost', error);
      }
      resumeFrom = parser.lastEventId || resumeFrom;
      const base = parser.retry ?? 1000;
      await pause(Math.min(base * 2 ** Math.max(0, failures - 1), maxBackoffMs), controller.signal);
    }
  }

  loop();
  return {
    close() {
      controller.abort();
    },
    get lastEventId() {
      return parser.lastEventId || resumeFrom;
    },
  };
}
