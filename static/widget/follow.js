// Following a resumable event stream: the one loop behind every reader of one — an answer's
// stream (chat.js), the conversation's stream of a hand-off (handoff.js) and of the agents'
// console (static/agent/api.js followConversation). No DOM; the network only through the
// caller's `request`. docs/protocol.md, "TCP close is never completion" and "The conversation
// event stream", is what it implements.
//
// A follow is a series of reads. Each read is one HTTP exchange made by `request`, with the
// read's AbortSignal and `Last-Event-ID`; its body goes through one sse.js parser kept for the
// whole follow, so the last event ID and the server's `retry:` outlive a reconnection (HTML
// Living Standard §9.2.3, "reestablish the connection"). A read ends:
// - when the server ends the body. If the caller's `ended()` says it has everything (an
//   answer's terminal event, a hand-off no longer going on), following ends there, cleanly;
//   otherwise it resumes (a close is never completion).
// - by a stall: no byte for `stallTimeoutMs`. The server sends a heartbeat after
//   HEARTBEAT_SECONDS of quiet (docs/protocol.md, "Framing"), so a live connection is never
//   silent that long; a half-open one (a peer gone without a FIN, a proxy holding the
//   response) delivers nothing and no error, ever, and only this timer notices it. The read is
//   aborted and resumed. Callers use the panel's rule, three heartbeats and 5 s
//   (widget_server/web.py `stallTimeoutMs`; the console's config repeats it).
// - by a network error, or a refusal (a response that is not an event stream, made an error
//   by `refusal`): resumed, unless `retryable(error)` says that trying again cannot help.
// - by `drop()` (resumed), or by the follow's `signal` (the end).
// Then, unless `resumeNow()` was asked (a gap: read again at once), a backoff: it starts at the
// server's `retry:` (else `retryMs`), doubles after each read that moved nothing forward (HTML
// §9.2.3: "if the previous attempt failed, then user agents might introduce an exponential
// backoff delay"), stops at `maxBackoffMs`, is jittered ±20 % so that clients dropped together
// do not come back together, and never ends before the error's Retry-After (RFC 9110
// §10.2.3). `wake()` cuts it short (back online).

import { createEventStreamParser } from './sse.js';

// A burst already received (a long answer read after it was written: thousands of events)
// is parsed in pieces, and after READ_BUDGET_MS of parsing the browser gets a turn (a frame,
// input), so reading never makes one long task (over 50 ms, https://w3c.github.io/longtasks/):
// reads that resolve at once chain as microtasks, all in one task, without it.
const FEED_BYTES = 16384;
const READ_BUDGET_MS = 8;
const yieldTurn = () =>
  globalThis.scheduler?.yield ? scheduler.yield() : new Promise((resolve) => setTimeout(resolve));

/**
 * Wait `milliseconds`, or less once any of `signals` aborts.
 * @param {number} milliseconds
 * @param {(AbortSignal | undefined)[]} signals
 * @returns {Promise<void>}
 */
function pause(milliseconds, signals) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      for (const signal of signals) signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, milliseconds);
    for (const signal of signals) signal?.addEventListener('abort', done);
    if (signals.some((signal) => signal?.aborted)) done();
  });
}

/**
 * The default refusal: an Error with the response's `status`.
 * @param {Response} response
 * @returns {Promise<Error & { status: number }>}
 */
async function statusError(response) {
  const error = /** @type {Error & { status: number }} */ (new Error(`HTTP ${response.status}`));
  error.status = response.status;
  return error;
}

/**
 * One event of the stream, its `data` parsed: the protocol's data is one line of JSON
 * (docs/protocol.md, "Framing"); an event whose data is not JSON is not one of ours and is
 * skipped.
 * @typedef {{ type: string, data: any, id: string }} StreamEvent
 */

/**
 * @typedef {object} FollowOptions
 * @property {(read: { lastEventId: string, headers: Record<string, string>, signal: AbortSignal }) => Promise<Response>} request
 *   One read's HTTP exchange: fetch the stream with `signal` and `headers` (`Last-Event-ID`
 *   when there is a position to resume from).
 * @property {(event: StreamEvent) => (boolean | void | Promise<boolean | void>)} onEvent
 *   Each event, in order. `true` (or a promise of it) when the event moved the reader forward:
 *   the next backoff starts again from its first step. A promise is awaited before the next read.
 * @property {number} stallTimeoutMs No byte for this long: the read is dead; abort and resume.
 * @property {number} [retryMs] The first backoff until the server sends `retry:` (default 1000).
 * @property {number} [maxBackoffMs] The longest backoff (default 8000).
 * @property {string} [lastEventId] Where the first read starts ('' for the beginning).
 * @property {() => string} [resumeId] Where each read starts, for a reader that applies events
 *   after reading them (checked, or in order): its last applied event; default the parser's
 *   last event ID (or `lastEventId` before the first).
 * @property {AbortSignal} [signal] Ends following for good (the read in flight, the backoff).
 * @property {(response: Response) => Promise<Error>} [refusal] The error for a response that is
 *   not an event stream (default: an Error with its `status`).
 * @property {(error: any) => boolean} [retryable] Whether a read that failed with `error` is
 *   tried again (default: always); false ends following with `{ reason: 'refused', error }`.
 * @property {() => boolean} [ended] Whether the reader has everything: checked before each read
 *   and after it; true ends following with `{ reason: 'ended' }`.
 * @property {() => (boolean | void | Promise<boolean | void>)} [beforeRead] Before each read
 *   (an offline wait); false ends following with `{ reason: 'stopped' }`.
 * @property {(read: { error: any, progressed: boolean }) => (boolean | void)} [afterRead]
 *   After each read that did not end following, before its backoff (`error`: undefined when the
 *   server ended the body); false ends following with `{ reason: 'stopped' }`.
 * @property {() => void} [onOpen] A read's response is an event stream.
 * @property {() => void} [onChunk] A chunk of the body has been parsed (all its events given).
 * @property {() => Promise<unknown>} [settle] Awaited after each read, before the next: events
 *   still being applied are applied, so `resumeId()` is where the next read starts.
 */

/**
 * How following ended: `ended` (the caller has everything), `refused` (with the `error` that
 * trying again cannot help), `stopped` (`beforeRead` or `afterRead` said so), `aborted` (the
 * follow's signal).
 * @typedef {{ reason: 'ended' | 'refused' | 'stopped' | 'aborted', error?: any }} FollowEnd
 */

/**
 * @typedef {object} Follower
 * @property {Promise<FollowEnd>} done Resolves once following has ended.
 * @property {string} lastEventId Where the next read starts.
 * @property {number | null} retry The server's `retry:` (null: not sent yet).
 * @property {() => void} drop Abort the read in flight; it resumes after the backoff.
 * @property {() => void} resumeNow Abort the read in flight and read again without a backoff.
 * @property {() => void} wake Cut the backoff under way short.
 */

/**
 * Follow a resumable event stream until it ends (see the top of this file).
 * @param {FollowOptions} options
 * @returns {Follower}
 */
export function follow({
  request,
  onEvent,
  stallTimeoutMs,
  retryMs = 1000,
  maxBackoffMs = 8000,
  lastEventId = '',
  resumeId,
  signal,
  refusal = statusError,
  retryable = () => true,
  ended = () => false,
  beforeRead,
  afterRead,
  onOpen,
  onChunk,
  settle,
}) {
  let progressed = false;
  const applying = new Set(); // promises onEvent returned, not yet settled
  const parser = createEventStreamParser((event) => {
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      return; // not one of ours
    }
    const moved = onEvent({ type: event.type, data, id: event.id });
    if (moved instanceof Promise) {
      const tracked = moved.then(
        (forward) => {
          if (forward === true) progressed = true;
        },
        () => {}, // the caller's own failure; its read goes on
      );
      applying.add(tracked);
      tracked.then(() => applying.delete(tracked));
    } else if (moved === true) {
      progressed = true;
    }
  });
  const position = () => (resumeId ? resumeId() : parser.lastEventId || lastEventId);
  let reading = null; // the AbortController of the read in flight
  let waking = null; // the AbortController of the backoff under way
  let again = false; // resumeNow() was asked: no backoff before the next read
  signal?.addEventListener('abort', () => reading?.abort());

  /**
   * One read; resolves to its error, or undefined when the server ended the body.
   * @returns {Promise<any>}
   */
  async function readOnce() {
    const controller = new AbortController();
    reading = controller;
    let stallTimer = 0;
    const touch = () => {
      clearTimeout(stallTimer);
      stallTimer = setTimeout(() => controller.abort(), stallTimeoutMs);
    };
    // From the request on: a server that never answers is as dead as one that stops talking.
    touch();
    try {
      const id = position();
      const response = await request({
        lastEventId: id,
        headers: id ? { 'Last-Event-ID': id } : {},
        signal: controller.signal,
      });
      const type = response.headers.get('Content-Type') || '';
      if (!response.ok || !type.startsWith('text/event-stream')) throw await refusal(response);
      onOpen?.();
      const reader = response.body.getReader();
      let parsing = 0; // ms since the browser last had a turn
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          touch();
          for (let at = 0; at < value.length; at += FEED_BYTES) {
            const started = performance.now();
            parser.feed(value.subarray(at, at + FEED_BYTES));
            parsing += performance.now() - started;
            if (parsing > READ_BUDGET_MS) {
              await yieldTurn();
              parsing = 0;
            }
          }
          onChunk?.();
        }
        parser.end();
      } finally {
        reader.releaseLock();
      }
      return undefined;
    } catch (error) {
      parser.reset();
      return error ?? new Error('read failed');
    } finally {
      clearTimeout(stallTimer);
    }
  }

  /** @returns {Promise<FollowEnd>} */
  async function run() {
    let backoff = 0;
    for (;;) {
      if (signal?.aborted) return { reason: 'aborted' };
      if (ended()) return { reason: 'ended' };
      if (beforeRead && (await beforeRead()) === false) return { reason: 'stopped' };
      if (signal?.aborted) return { reason: 'aborted' };
      progressed = false;
      again = false;
      const error = await readOnce();
      while (applying.size) await Promise.all(applying);
      await settle?.();
      if (signal?.aborted) return { reason: 'aborted' };
      if (ended()) return { reason: 'ended' };
      if (error && !retryable(error)) return { reason: 'refused', error };
      if (progressed) backoff = 0;
      if (afterRead?.({ error, progressed }) === false) return { reason: 'stopped' };
      if (again) continue;
      backoff = backoff ? Math.min(backoff * 2, maxBackoffMs) : (parser.retry ?? retryMs);
      const jitter = 0.8 + Math.random() * 0.4;
      const retryAfterMs = (Number(error?.retryAfter) || 0) * 1000;
      waking = new AbortController();
      await pause(Math.max(backoff * jitter, retryAfterMs), [waking.signal, signal]);
    }
  }

  return {
    done: run(),
    get lastEventId() {
      return position();
    },
    get retry() {
      return parser.retry;
    },
    drop() {
      reading?.abort();
    },
    resumeNow() {
      again = true;
      reading?.abort();
    },
    wake() {
      waking?.abort();
    },
  };
}
