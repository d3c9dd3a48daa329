// The outbox (docs/design.md, "The outbox"; docs/accessibility.md A43).
//
// A message sent while the browser is offline — the first one too, before any conversation
// exists — waits here: its turn says "Waiting for connection", one polite announcement says
// so, and it is kept across a reload of the panel. Back online (the `online` event, or a
// panel loaded online), each waiting message is sent once, in order, with the request_id it
// was given when it was typed: if a reload interrupts a send before the server answered, the
// next send carries the same request_id and the server's idempotent claim returns the answer
// that already exists instead of starting another (docs/design.md, "Every message has an
// identity").
//
// chat.js loads this module when the panel is ready, while online: a module cannot be
// fetched once the network is gone.

import { lazyStrings } from './lazy-parts.js';

const KEY = 'chatwidget_outbox';
// Kept a day; a message older than that is stale rather than late.
const MAX_AGE_SECONDS = 86400;
// A cookie holds about 4 KiB; a longer outbox is kept for this page only (docs/design.md).
const MAX_COOKIE_CHARS = 3500;
/** @type {import('./host.js').HostEventName[]} */
const RUN_EVENTS = ['event', 'state'];

/** @typedef {import('./host.js').PanelHost} PanelHost */
/** @typedef {import('./host.js').AnswerRunView} AnswerRun */
/** @typedef {import('./client.js').SendRequest} SendRequest */

// Resolves once `condition()` holds, checked now and at every run event and state change of
// the panel; after `timeoutMs`, if given, whatever holds.
/**
 * @param {PanelHost} host
 * @param {() => unknown} condition
 * @param {number} [timeoutMs]
 * @returns {Promise<void>}
 */
export function until(host, condition, timeoutMs = 0) {
  return new Promise((resolve) => {
    let timer = 0;
    /** @type {(() => void)[]} */
    let stops = [];
    const done = () => {
      clearTimeout(timer);
      for (const stop of stops) stop();
      resolve();
    };
    const check = () => condition() && done();
    if (timeoutMs) timer = setTimeout(done, timeoutMs);
    stops = RUN_EVENTS.map((name) => host.on(name, check));
    check();
  });
}

/**
 * An answer has ended (not streaming, reconnecting or verifying).
 * @type {(host: PanelHost, run: AnswerRun, timeoutMs?: number) => Promise<void>}
 */
export const ended = (host, run, timeoutMs) =>
  until(host, () => !run.inProgress && run.phase !== 'verifying', timeoutMs);

// Where the panel may keep something across a reload: localStorage where a third-party
// iframe may use it (Firefox), and a partitioned cookie (CHIPS) where it may not (Debian's
// Chromium throws SecurityError for localStorage and sessionStorage there; docs/testing.md,
// "System browsers"). Path=/panel: only the panel's own page request carries it.
/** @returns {{ request_id: string, text: string }[]} */
function load() {
  let raw = null;
  try {
    raw = localStorage.getItem(KEY);
  } catch {
    /* storage blocked: the cookie */
  }
  if (raw == null) {
    const pair = document.cookie.split('; ').find((part) => part.startsWith(`${KEY}=`));
    raw = pair ? decodeURIComponent(pair.slice(KEY.length + 1)) : null;
  }
  try {
    const saved = JSON.parse(raw || '[]');
    return Array.isArray(saved) ? saved.filter((entry) => entry?.request_id && entry.text) : [];
  } catch {
    return []; // corrupt: nothing to send
  }
}

/** @param {{ request_id: string, text: string }[]} entries */
function save(entries) {
  const value = JSON.stringify(entries);
  try {
    if (entries.length) localStorage.setItem(KEY, value);
    else localStorage.removeItem(KEY);
  } catch {
    /* storage blocked: the cookie */
  }
  const encoded = encodeURIComponent(value);
  const keep = entries.length && encoded.length <= MAX_COOKIE_CHARS;
  // biome-ignore lint/suspicious/noDocumentCookie: a partitioned cookie needs document.cookie (Cookie Store API lacks it in Firefox).
  document.cookie = `${KEY}=${keep ? encoded : ''}; Max-Age=${keep ? MAX_AGE_SECONDS : 0}; Path=/host; Secure; SameSite=None; Partitioned`;
}

class Outbox {
  /**
   * @param {PanelHost} host
   * @param {Record<string, string>} strings
   */
  constructor(host, strings) {
    this.host = host;
    this.strings = strings;
    /** @type {{ item: HTMLElement, request: SendRequest }[]} oldest first */
    this.waiting = [];
    this.sending = false;
    this.leaving = false; // the page is going away (pagehide): what waits stays for the next load
  }

  // Keeps the message if it cannot go now (offline, or others wait before it). Returns
  // whether it did. `restored`: kept before a reload, and announced then.
  /**
   * @param {HTMLElement} item The message's turn.
   * @param {SendRequest} request
   * @param {boolean} [restored]
   * @returns {boolean}
   */
  hold(item, request, restored = false) {
    if (!restored && navigator.onLine && !this.waiting.length) return false;
    this.waiting.push({ item, request });
    this.save();
    item.dataset.state = 'waiting';
    const status = document.createElement('p');
    status.className = 'turn__status';
    status.dataset.chatOutbox = '';
    status.textContent = this.strings.waiting;
    item.append(status);
    if (restored) return true;
    this.host.announcer.cue(this.strings.queued);
    if (navigator.onLine) this.send(); // others wait before it: it goes after them
    return true;
  }

  // Messages whose turn left the transcript (a start-over here or in another tab) are not sent.
  prune() {
    this.waiting = this.waiting.filter(({ item }) => item.isConnected);
    this.save();
  }

  save() {
    save(
      this.waiting.map(({ request }) => ({
        request_id: request.requestId,
        text: request.text,
      })),
    );
  }

  // Each waiting message once, in order; one answer at a time (the server runs one per
  // conversation), so a message waits for the answer before it.
  async send() {
    if (this.sending) return;
    this.sending = true;
    const host = this.host;
    try {
      while (this.waiting.length && navigator.onLine) {
        const current = host.currentRun();
        if (current) await ended(host, current);
        this.prune();
        if (!this.waiting.length) break;
        const { item, request } = this.waiting[0];
        delete item.dataset.state;
        item.querySelector('[data-chat-outbox]')?.remove();
        const run = host.startRun({ request });
        item.after(run.turn.item); // its answer follows it, before messages still waiting
        // Kept until the server took it (its message id) or the run ended otherwise: a
        // reload before that sends it again, with the same request_id. A run cut short by
        // the page going away ends too: then it stays for the next load.
        await until(host, () => run.model.messageId || !run.inProgress);
        if (this.leaving) return;
        this.waiting.shift();
        this.save();
        await ended(host, run);
      }
    } finally {
      this.sending = false;
    }
  }
}

/** @type {WeakMap<PanelHost, Outbox>} */
const outboxes = new WeakMap();

/**
 * After a start-over followed from another tab (tab-sync.js).
 * @param {PanelHost} host
 */
export const prune = (host) => outboxes.get(host)?.prune();

/** @param {PanelHost} host */
export async function init(host) {
  const strings = await lazyStrings(host, 'offlineOutbox');
  if (!strings) return; // the strings could not be fetched: no outbox this time, as before
  const outbox = new Outbox(host, strings);
  outboxes.set(host, outbox);
  host.provide({ hold: (item, request) => outbox.hold(item, request) });
  // New conversation here (conversation-tools.js) emptied the transcript.
  host.on('conversation', () => outbox.prune());
  window.addEventListener('online', () => outbox.send());
  window.addEventListener('pagehide', () => {
    outbox.leaving = true;
  });
  for (const entry of load()) {
    const request = { requestId: entry.request_id, text: entry.text };
    outbox.hold(host.addUserTurn(entry.text), request, true);
  }
  if (navigator.onLine) outbox.send();
}
