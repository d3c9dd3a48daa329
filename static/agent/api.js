// The agent API client: every HTTP request of the console (docs/agents.md, "The agent API"),
// and the only module of static/agent/ that makes one (tests/test_architecture.py).
// The session is the `__Host-agent_session` cookie the browser sends by itself (same
// origin); every state-changing request also carries the session's CSRF token in
// `X-CSRF-Token`. Errors are the server's JSON errors, as the widget's client reads them
// (static/widget/client.js ApiError: status, code, message, details).

import { ApiError, jsonOrNull, newRequestId } from '../widget/client.js';
import { follow } from '../widget/follow.js';

export { ApiError, newRequestId };

// The console's words in `lang` (static/agent/i18n/<lang>.json), when its config has none.
export async function consoleStrings(lang) {
  const response = await fetch(new URL(`./i18n/${lang}.json`, import.meta.url));
  return response.json();
}

export class AgentApi {
  /** @param {{ apiBase: string, csrfToken: string }} options */
  constructor({ apiBase, csrfToken }) {
    this.apiBase = apiBase.replace(/\/$/, '');
    this.csrfToken = csrfToken;
  }

  /**
   * @param {string} method
   * @param {string} path
   * @param {object} [body]
   * @returns {Promise<any>}
   */
  async request(method, path, body) {
    /** @type {Record<string, string>} */
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
    if (!response.ok) throw new ApiError(response.status, json);
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
  /**
   * @param {{ limit?: number, cursor?: string }} [page]
   * @returns {Promise<any>}
   */
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

// Before the console's config says (it always does, agents/api.py `console()`): the panel's rule
// for the server's default heartbeat of 15 s, three heartbeats and 5 s (widget_server/web.py).
const DEFAULT_STALL_TIMEOUT_MS = 50000;

// A conversation's event stream (docs/protocol.md, "The conversation event stream"), followed
// with the widget's follow.js (its standards-exact parser, static/widget/sse.js): resumed after
// a drop, or a stall (no byte for `stallTimeoutMs`: a half-open connection), with Last-Event-ID
// (`<conversation_id>:<seq>`), so nothing is missed or repeated; the server sends a
// `conversation.snapshot` when that position has left its log. `onEvent(type, data, id)` runs
// per event; `onState('open' | 'lost' | 'closed', error?)` when the connection changes
// ('lost' once per outage; 'closed': refused for good, not this agent's any more or signed
// out). `close()` ends it for good.
/**
 * @param {string} apiBase
 * @param {string} conversationId
 * @param {object} options
 * @param {string} [options.lastEventId]
 * @param {(type: string, data: any, id: string) => void} options.onEvent
 * @param {(state: 'open' | 'lost' | 'closed', error?: any) => void} options.onState
 * @param {number} [options.stallTimeoutMs]
 * @param {number} [options.maxBackoffMs]
 * @returns {{ close(): void, readonly lastEventId: string }}
 */
export function followConversation(
  apiBase,
  conversationId,
  {
    lastEventId = '',
    onEvent,
    onState,
    stallTimeoutMs = DEFAULT_STALL_TIMEOUT_MS,
    maxBackoffMs = 8000,
  },
) {
  const controller = new AbortController();
  const url = `${apiBase.replace(/\/$/, '')}/conversations/${conversationId}/events`;
  let lost = false; // said once per outage
  const follower = follow({
    request: ({ headers, signal }) =>
      fetch(url, { headers, credentials: 'same-origin', cache: 'no-store', signal }),
    lastEventId,
    signal: controller.signal,
    stallTimeoutMs,
    maxBackoffMs,
    refusal: async (response) => new ApiError(response.status, await jsonOrNull(response)),
    // Not ours to follow any more (ended, claimed by someone else) or signed out:
    // reconnecting would only be refused again.
    retryable: (error) => ![401, 403, 404].includes(error?.status),
    onEvent: ({ type, data, id }) => {
      onEvent(type, data, id);
      return true; // every event of the conversation is news: the backoff starts over
    },
    onOpen: () => {
      lost = false;
      onState('open');
    },
    afterRead: ({ error }) => {
      if (error && !lost) {
        lost = true;
        onState('lost', error);
      }
    },
  });
  follower.done.then(({ reason, error }) => {
    if (reason === 'refused') onState('closed', error);
  });
  return {
    close() {
      controller.abort();
    },
    get lastEventId() {
      return follower.lastEventId;
    },
  };
}
