// The panel's half of the host page's API (docs/embedding.md, "Driving the widget from your
// page"): ChatWidget.send(), setComposer() and setContext() arrive here, checked; the panel's
// events go back to the page, which the loader dispatches on its script element
// (docs/events.md, "On the loader's <script> element"). Loaded only when a page uses the API
// (chat.js, on its first `chatwidget:api` message), so other pages pay nothing for it
// (tests/test_budgets.py). The messages come from the host origin the server vetted only
// (chat.js originAllowed), and their values are data: text goes into the composer's value,
// never into markup.

import { ANSWER_EVENT } from './protocol.js';

/** @typedef {import('./host.js').PanelHost} PanelHost */
/** @typedef {import('./host.js').AnswerRunView} AnswerRunView */

// The bounds of a site's context, as the server checks them (wire/bodies.py CONTEXT): its JSON
// at most CONTEXT_MAX_BYTES of UTF-8, a flat object of at most CONTEXT_MAX_KEYS keys, each at
// most CONTEXT_KEY_MAX_CHARS long, whose values are strings, finite numbers or booleans.
export const CONTEXT_MAX_BYTES = 2048;
export const CONTEXT_MAX_KEYS = 32;
export const CONTEXT_KEY_MAX_CHARS = 64;
// What the server's clean_text() would change (widget_server/messages.py): a control character
// but tab and line feed, or a lone surrogate. The server refuses such a context; so does this.
const UNCLEAN = /(?![\t\n\x80-\x9f])\p{Cc}|\p{Cs}/u;

/**
 * The context a page's ChatWidget.setContext() gave, as JSON; null when it breaks a bound (the
 * console says why), undefined for none (`null` or `{}`: the context is cleared).
 * @param {unknown} json
 * @returns {Record<string, string | number | boolean> | undefined | null}
 */
export function checkedContext(json) {
  if (json === undefined) return undefined;
  const refuse = (why) => {
    console.error(`chat widget: setContext() ignored: ${why}`);
    return null;
  };
  if (typeof json !== 'string') return refuse('not JSON');
  if (new TextEncoder().encode(json).length > CONTEXT_MAX_BYTES)
    return refuse(`its JSON is over ${CONTEXT_MAX_BYTES} bytes`);
  const context = JSON.parse(json);
  if (context === null) return undefined;
  if (typeof context !== 'object' || Array.isArray(context)) return refuse('not a plain object');
  const entries = Object.entries(context);
  if (entries.length > CONTEXT_MAX_KEYS) return refuse(`more than ${CONTEXT_MAX_KEYS} keys`);
  for (const [key, value] of entries) {
    if (!key || key.length > CONTEXT_KEY_MAX_CHARS)
      return refuse(`a key is empty or over ${CONTEXT_KEY_MAX_CHARS} characters`);
    if (UNCLEAN.test(key) || (typeof value === 'string' && UNCLEAN.test(value)))
      return refuse(`"${key}" has a control character`);
    const kind = typeof value;
    if (kind !== 'string' && kind !== 'boolean' && !(kind === 'number' && Number.isFinite(value)))
      return refuse(`"${key}" is not a string, a number or a boolean`);
  }
  return entries.length ? context : undefined;
}

/**
 * Starts the bridge; returns what takes each message of the page, in order.
 * @param {PanelHost} host
 * @returns {(message: { name?: unknown, value?: unknown }) => void}
 */
export function init(host) {
  const origin = host.config.hostOrigin;
  // Events go to the vetted host origin only: a page of another origin that framed the panel
  // hears nothing (docs/security.md, "The host page's API").
  /** @type {(name: string, detail: Record<string, unknown>) => void} */
  const tell = (name, detail) => {
    if (origin && window.parent !== window)
      window.parent.postMessage({ type: 'chatwidget:host', name, detail }, origin);
  };

  // Each answer's events once, in order: started, then completed or failed.
  const started = new Set();
  const ended = new Set();
  /** @type {WeakSet<object>} the requests already told as `message-sent` */
  const sent = new WeakSet();
  let handoffState = '';
  /** @type {Record<string, string | number | boolean> | undefined} ChatWidget.setContext()'s */
  let context;

  /** @param {string} messageId */
  const runOf = (messageId) => {
    const run =
      /** @type {(AnswerRunView & { error?: { code?: string, refused?: string } }) | null} */ (
        host.currentRun()
      );
    return run && (!messageId || run.model.messageId === messageId) ? run : null;
  };

  const ready = () => tell('ready', {});
  if (host.root.dataset.ready) ready();
  else host.on('ready', ready);

  host.on('state', (event) => {
    const { state, messageId } = event.detail;
    const run = runOf(messageId);
    const request = run?.request;
    // A new message's answer begins (regenerate and edit post elsewhere: request.url).
    if (state === 'streaming' && request && !request.url && !sent.has(request)) {
      sent.add(request);
      // The page's context goes with the message (docs/protocol.md, "The host page's context"):
      // its POST is made after this, in the same task (chat.js AnswerRun.start()).
      if (context)
        request.body = {
          request_id: request.requestId,
          text: request.text,
          ...request.body,
          context,
        };
      tell('message-sent', { requestId: request.requestId, text: request.text || '' });
    }
    if (state === 'completed' && run && !ended.has(messageId)) {
      ended.add(messageId);
      const model =
        /** @type {{ messageId: string, text: string, completion: { sha256: string } }} */ (
          /** @type {unknown} */ (run.model)
        );
      // Only now: the text's SHA-256 matched message.completed's (model.js verify()), so the
      // page gets the verified text and that same digest.
      tell('answer-completed', {
        messageId,
        text: model.text,
        sha256: model.completion.sha256,
      });
    }
    if (state === 'failed' && !(messageId && ended.has(messageId))) {
      if (messageId) ended.add(messageId);
      // The server's code (message.failed, a refusal) or the panel's own ('integrity', 'lost').
      tell('answer-failed', { messageId, code: run?.error?.code || run?.error?.refused || '' });
    }
  });

  host.on('event', (event) => {
    const { type, outcome } = event.detail;
    const run = runOf('');
    const messageId = run?.model.messageId || '';
    if (type !== ANSWER_EVENT.MESSAGE_STARTED || outcome !== 'applied' || !messageId) return;
    if (started.has(messageId)) return;
    started.add(messageId);
    tell('answer-started', { messageId });
  });

  host.on('handoff', (event) => {
    const state = event.detail.state;
    if (state === handoffState) return;
    handoffState = state;
    tell('handoff-state', { state });
  });

  const limit = host.input.maxLength;
  /** @param {unknown} text */
  const fits = (text) => typeof text === 'string' && text.length <= limit;

  return ({ name, value }) => {
    if (name === 'context') {
      const checked = checkedContext(value);
      if (checked !== null) context = checked;
    } else if (name === 'composer' && fits(value)) {
      // The visitor's composer, filled; focus stays where it is (docs/accessibility.md A129).
      host.input.value = /** @type {string} */ (value);
    } else if (name === 'send' && fits(value)) {
      // As if the visitor typed it and pressed Send (A128): the same checks (consent, a person
      // who has the conversation, an answer still running) and the same announcements. What
      // they had typed comes back once the message has gone.
      const input = host.input;
      const draft = input.value;
      input.value = /** @type {string} */ (value);
      host.form.requestSubmit();
      if (!input.value) input.value = draft;
    }
  };
}
