// The client's model of one streamed answer: pure, no DOM, no network.
//
// Per docs/design.md ("Reconnection without duplicated text"): events are
// applied idempotently — a sequence number at or below the last applied one
// is ignored; a gap (a missing number) is reported so the caller fetches a
// snapshot; only `message.completed` completes, and its SHA-256 must match
// the text we show (a mismatch is an error, never a silent success).

import { ANSWER_EVENT, MESSAGE_STATE, TERMINAL_MESSAGE_STATES } from './protocol.js';
import { sha256Hex } from './sha256.js';

export const TERMINAL = new Set(TERMINAL_MESSAGE_STATES);

/**
 * An answer event's data (docs/protocol.md, "Events"): every kind has `message_id` and `seq`;
 * the others are its kind's.
 * @typedef {object} AnswerEventData
 * @property {string} message_id
 * @property {number} seq
 * @property {string} [text] `text.delta`, `message.snapshot`, `message.progress`.
 * @property {number} [length]
 * @property {number} [utf8_bytes] `message.completed`.
 * @property {string} [sha256] `message.completed`.
 * @property {import('./client.js').Action[]} [actions] `message.completed`: the actionable ones.
 * @property {Source[]} [sources] `message.completed`: the documents the answer cites.
 * @property {AnswerError} [error] `message.failed`.
 * @property {string} [action_id] `action.proposed`.
 */

/**
 * A document an answer rests on (docs/protocol.md, "Sources"): `[id]` in the text cites it.
 * @typedef {{ id: string, title: string, url?: string, snippet?: string }} Source
 */

/**
 * Why an answer failed: the server's (`message.failed`) or the panel's own; `refused`, the
 * code of the server's refusal to take the message (chat.js failLocally), for the host page.
 * @typedef {{ code: string, message?: string, retryable?: boolean, refused?: string }} AnswerError
 */

/** @typedef {'applied' | 'duplicate' | 'gap' | 'ignored'} Outcome */

export class AnswerModel {
  /** @param {string} [messageId] '' until `message.started` says it */
  constructor(messageId = '') {
    this.messageId = messageId;
    this.lastSeq = 0;
    this.text = '';
    /** @type {string} running | completed | cancelled | failed | incomplete */
    this.state = MESSAGE_STATE.RUNNING;
    /** @type {AnswerError | null} */
    this.error = null;
    /** @type {AnswerEventData | null} `message.completed`'s data */
    this.completion = null;
    this.duplicates = 0; // events received again and ignored
    this.gaps = 0; // gaps seen (each repaired by a snapshot)
    this.dropped = 0; // sequence numbers never received, summed over the gaps
    this.beyondGap = 0; // the highest seq seen past the open gap (none open: at most lastSeq)
    /** @type {Map<string, AnswerEventData>} action.proposed, by action_id: informational only */
    this.proposed = new Map();
    /** The newest `message.progress` line ('' before any): what the backend is doing. */
    this.progress = '';
  }

  get lastEventId() {
    return this.messageId ? `${this.messageId}:${this.lastSeq}` : '';
  }

  get terminal() {
    return TERMINAL.has(this.state);
  }

  // The actions a user may confirm: only a completed answer's, as its
  // `message.completed` lists them. A cancelled or failed answer has none,
  // whatever `action.proposed` events arrived before it ended.
  /** @returns {import('./client.js').Action[]} */
  get actionable() {
    const listed =
      this.state === MESSAGE_STATE.COMPLETED && this.completion && this.completion.actions;
    return Array.isArray(listed) ? listed : [];
  }

  // The sources of a completed answer, as its `message.completed` lists them; none otherwise.
  /** @returns {Source[]} */
  get sources() {
    const listed =
      this.state === MESSAGE_STATE.COMPLETED && this.completion && this.completion.sources;
    return Array.isArray(listed) ? listed : [];
  }

  // Apply one parsed event ({type, data}); returns what happened:
  // 'applied' | 'duplicate' | 'gap' | 'ignored'.
  /**
   * @param {string} type
   * @param {AnswerEventData} data
   * @returns {Outcome}
   */
  apply(type, data) {
    if (!data || typeof data.seq !== 'number') return 'ignored';
    if (!this.messageId) this.messageId = data.message_id;
    if (data.message_id !== this.messageId) return 'ignored';
    if (this.terminal) return 'duplicate';
    if (type === ANSWER_EVENT.MESSAGE_SNAPSHOT) {
      // A snapshot replaces everything up to its seq; an older one is stale.
      if (data.seq < this.lastSeq) return 'duplicate';
      this.text = data.text;
      this.lastSeq = data.seq;
      return 'applied';
    }
    if (data.seq <= this.lastSeq) {
      this.duplicates += 1;
      return 'duplicate';
    }
    if (data.seq !== this.lastSeq + 1) {
      // One gap, however many events after it arrive before the snapshot read (the rest of the
      // chunk the gap came in is still parsed): only numbers never seen count as dropped
      // (tests/e2e/test_client_modules.py).
      const open = this.beyondGap > this.lastSeq;
      if (!open) this.gaps += 1;
      const counted = open ? this.beyondGap : this.lastSeq;
      if (data.seq > counted) {
        this.dropped += data.seq - counted - 1;
        this.beyondGap = data.seq;
      }
      return 'gap';
    }
    this.lastSeq = data.seq;
    switch (type) {
      case ANSWER_EVENT.TEXT_DELTA:
        this.text += data.text;
        break;
      case ANSWER_EVENT.MESSAGE_COMPLETED:
        this.completion = data;
        this.state = MESSAGE_STATE.COMPLETED;
        break;
      case ANSWER_EVENT.MESSAGE_FAILED:
        this.error = data.error;
        this.state = MESSAGE_STATE.FAILED;
        break;
      case ANSWER_EVENT.MESSAGE_CANCELLED:
        this.state = MESSAGE_STATE.CANCELLED;
        break;
      case ANSWER_EVENT.ACTION_PROPOSED:
        this.proposed.set(data.action_id, data);
        break;
      case ANSWER_EVENT.MESSAGE_PROGRESS:
        this.progress = data.text;
        break;
      default:
        break; // message.started and future kinds only advance the sequence
    }
    return 'applied';
  }

  /**
   * After completion: does the text we hold hash to what the server computed?
   * @returns {Promise<boolean>}
   */
  async verify() {
    if (!this.completion) return false;
    const bytes = new TextEncoder().encode(this.text);
    if (bytes.length !== this.completion.utf8_bytes) return false;
    return (await sha256Hex(bytes)) === this.completion.sha256;
  }
}
