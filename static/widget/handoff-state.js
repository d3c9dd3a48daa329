// The hand-off's state, apart from its view (handoff.js): what the conversation's event stream
// (docs/protocol.md, "The conversation event stream"; widget_server/handoff/events.py) and the
// hand-off's API answers make of it. No DOM, no network, no timers: handoff.js reads the stream,
// checks each message's SHA-256, and turns what this module reduces into the transcript, the
// bar above the composer and what the announcer says (docs/accessibility.md A53–A58). Tested
// directly in a page: tests/e2e/test_handoff_state.py. Its one import is the wire's names (protocol.js, data).

import { CONVERSATION_EVENT } from './protocol.js';

// Position changes in the line are said at most this often (docs/accessibility.md A53: "at most
// once every 30 seconds").
export const POSITION_ANNOUNCE_MS = 30000;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
// A hand-off's state changes, of which only the newest of a replayed backlog counts.
/** @type {string[]} */
const STATE_EVENTS = [
  CONVERSATION_EVENT.HANDOFF_QUEUED,
  CONVERSATION_EVENT.HANDOFF_ASSIGNED,
  CONVERSATION_EVENT.HANDOFF_ENDED,
];
const DAY_MS = 86400000;

/**
 * One event of the conversation's stream, as follow.js reads it.
 * @typedef {{ type: string, data: Record<string, any>, id?: string }} ConversationEvent
 */

/**
 * What an event or an answer changed, for the view to show and say:
 * - `entered`: the state is `state` now, `before` before; `joined`: an agent (another one)
 *   has the conversation; `queuedAnew`: just put in line.
 * - `ended`: the hand-off is over (`agent`: who had it, '' if nobody; `reason` the server's).
 * - `lapsed`: the agent's console was gone past its grace period: back in line.
 * - `typing`: `agent` is typing (shown, never said).
 * - `none`: nothing to show.
 * @typedef {{ kind: 'entered', before: string, state: string, joined: boolean, queuedAnew: boolean }
 *   | { kind: 'ended', agent: string, reason: string }
 *   | { kind: 'lapsed', agent: string }
 *   | { kind: 'typing', agent: string }
 *   | { kind: 'none' }} HandoffChange
 */

/**
 * A message the visitor sent to the person from this tab, its `visitor.message` not yet seen.
 * `item` is the view's (its turn), never read here.
 * @typedef {{ text: string, refs?: any[], item?: any }} PendingSend
 */

export class HandoffState {
  constructor() {
    /** @type {'none' | 'requesting' | 'queued' | 'assigned'} */
    this.state = 'none';
    this.agent = ''; // the agent who has the conversation
    this.position = 0; // in line, from 1
    this.seen = new Set(); // message ids shown (restored, sent, received)
    this.lastSeq = 0; // the last event applied: the stream resumes after it
    this.conversationId = '';
    this.catchUp = false; // the first read starts at 0: skip earlier hand-offs (foldBacklog)
    /** @type {PendingSend[]} */
    this.pendingSends = [];
    this.positionSpoken = 0; // the position said last
    this.positionSpokenAt = -Infinity; // when it was heard
    this.leaveRequestId = ''; // a left message's, kept for its retries
  }

  get active() {
    return this.state === 'queued' || this.state === 'assigned';
  }

  // The conversation the hand-off belongs to: another one starts from its first event.
  /** @param {string} conversationId */
  bind(conversationId) {
    if (this.conversationId === conversationId) return;
    this.conversationId = conversationId;
    this.lastSeq = 0;
  }

  // Start over (conversation-tools.js): nothing of the old conversation is kept.
  forget() {
    this.state = 'none';
    this.agent = '';
    this.seen.clear();
    this.pendingSends = [];
    this.lastSeq = 0;
    this.conversationId = '';
  }

  // The request's answer ({state, position?, agent?, seq?}): the stream starts after the events
  // it already reflects, its `seq` where the server gives one; else after the last hand-off that
  // ended before (catchUp: foldBacklog).
  /** @param {{ seq?: number | string | null }} body */
  requested(body) {
    if (body.seq != null) this.lastSeq = Math.max(this.lastSeq, Number(body.seq));
    else this.catchUp = !this.lastSeq;
  }

  // After a reload, from the panel's config ({state, agent?, position?, seq}).
  /**
   * @param {{ state: string, seq?: number | string, agent?: string, position?: number }} body
   * @returns {HandoffChange}
   */
  resume(body) {
    this.lastSeq = Math.max(this.lastSeq, Number(body.seq) || 0);
    return this.enter(body);
  }

  // The position was heard at `heardAt` (before a reload): the next one waits its turn.
  /** @param {number} heardAt */
  positionHeard(heardAt) {
    this.positionSpokenAt = heardAt;
    this.positionSpoken = this.position;
  }

  // -- the event stream's order ---------------------------------------------------------------

  // An event's place: `apply` it, a `duplicate` (a resume's overlap) or after a `gap` (read
  // again from the last applied one; never guessed). A snapshot is always applied.
  /**
   * @param {ConversationEvent} event
   * @returns {{ verdict: 'apply' | 'duplicate' | 'gap', seq: number }}
   */
  place({ type, data, id }) {
    const seq = Number(data.seq ?? String(id).split(':').pop()) || 0;
    if (type === CONVERSATION_EVENT.CONVERSATION_SNAPSHOT || !seq) return { verdict: 'apply', seq };
    if (seq <= this.lastSeq) return { verdict: 'duplicate', seq };
    if (seq > this.lastSeq + 1 && this.lastSeq) return { verdict: 'gap', seq };
    return { verdict: 'apply', seq };
  }

  /** @param {number} seq The event just applied. */
  applied(seq) {
    if (seq) this.lastSeq = seq;
  }

  // A stream read from 0 replays the conversation's earlier hand-offs too: what came before the
  // last one that ended (or found nobody) is past, and only what follows is applied. Of this
  // hand-off's state changes only the newest counts (the request's answer already said where
  // it stands): the older ones become `replayed`, which changes nothing. Returns the events to
  // apply, in order.
  /**
   * @param {ConversationEvent[]} events The first read's, all of them.
   * @returns {ConversationEvent[]}
   */
  foldBacklog(events) {
    this.catchUp = false;
    let start = 0;
    events.forEach((event, index) => {
      const over =
        event.type === CONVERSATION_EVENT.HANDOFF_UNAVAILABLE ||
        (event.type === CONVERSATION_EVENT.HANDOFF_ENDED && event.data.reason !== 'timeout');
      if (over) start = index + 1;
    });
    if (start) this.lastSeq = Number(events[start - 1].data.seq) || this.lastSeq;
    let newest = -1;
    events.forEach((event, index) => {
      if (index >= start && STATE_EVENTS.includes(event.type)) newest = index;
    });
    return events
      .slice(start)
      .map((event, offset) =>
        offset + start < newest && STATE_EVENTS.includes(event.type)
          ? { ...event, type: 'replayed' }
          : event,
      );
  }

  // -- the state ------------------------------------------------------------------------------

  // A state event (messages and snapshots are `message` and `snapshot`'s).
  /**
   * @param {string} type
   * @param {Record<string, any>} data
   * @returns {HandoffChange}
   */
  reduce(type, data) {
    if (type === CONVERSATION_EVENT.HANDOFF_QUEUED)
      return this.enter({ state: 'queued', position: data.position });
    if (type === CONVERSATION_EVENT.HANDOFF_ASSIGNED)
      return this.enter({ state: 'assigned', agent: data.agent });
    if (type === CONVERSATION_EVENT.AGENT_TYPING)
      return this.state === 'assigned' ? { kind: 'typing', agent: data.agent } : { kind: 'none' };
    if (type === CONVERSATION_EVENT.HANDOFF_ENDED && data.reason === 'timeout')
      return this.lapse(data.agent);
    if (type === CONVERSATION_EVENT.HANDOFF_ENDED) return this.finish(data.agent, data.reason);
    return { kind: 'none' };
  }

  // The server's word ({state, agent?, position?}), from an answer or an event.
  /**
   * @param {{ state: string, agent?: string, position?: number | string }} body
   * @returns {HandoffChange}
   */
  enter(body) {
    const before = this.state;
    let joined = false;
    if (body.state === 'queued') {
      this.state = 'queued';
      this.position = Number(body.position) || 1;
    } else if (body.state === 'assigned') {
      joined = before !== 'assigned' || this.agent !== body.agent;
      this.state = 'assigned';
      this.agent = body.agent || this.agent;
    }
    const queuedAnew = this.state === 'queued' && before !== 'queued';
    return { kind: 'entered', before, state: this.state, joined, queuedAnew };
  }

  // Over, whoever ended it: back with the assistant. Once: nothing when none is going on.
  /**
   * @param {string} [agent]
   * @param {string} [reason]
   * @returns {HandoffChange}
   */
  finish(agent, reason = '') {
    if (!this.active) return { kind: 'none' };
    const name = agent || this.agent;
    this.state = 'none';
    this.agent = '';
    this.position = 0;
    this.positionSpoken = 0;
    return { kind: 'ended', agent: name, reason };
  }

  // The agent's console was gone past the grace period: back in line, in the old place
  // (handoff.queued follows with the position).
  /**
   * @param {string} [agent]
   * @returns {HandoffChange}
   */
  lapse(agent) {
    if (this.state !== 'assigned') return { kind: 'none' };
    const name = agent || this.agent;
    this.state = 'queued';
    this.agent = '';
    return { kind: 'lapsed', agent: name };
  }

  // A resume from an evicted position (docs/protocol.md): the messages not yet shown, for the
  // view to check and show, and the state it stands in.
  /**
   * @param {{ state: string, agent?: string, position?: number, messages?: any[] }} data
   * @returns {{ messages: any[], change: () => HandoffChange }} `change` once the messages are in.
   */
  snapshot(data) {
    return {
      messages: (data.messages || []).filter((message) => !this.seen.has(message.message_id)),
      change: () =>
        data.state === 'queued' || data.state === 'assigned'
          ? this.enter(data)
          : this.finish(data.agent, 'ended'),
    };
  }

  // -- messages ---------------------------------------------------------------------------------

  // A message of the stream, checked: what the view shows. An agent's, once; the visitor's own
  // is this tab's send (`confirmed`: its turn is there already) or another tab's (`visitor`).
  /**
   * @param {'agent' | 'visitor'} role
   * @param {{ message_id: string, text: string }} data
   * @returns {{ kind: 'agent' | 'visitor' | 'none' } | { kind: 'confirmed', pending: PendingSend }}
   */
  message(role, data) {
    if (this.seen.has(data.message_id)) return { kind: 'none' };
    this.seen.add(data.message_id);
    if (role === 'agent') return { kind: 'agent' };
    const pending = this.pendingSends.findIndex((send) => send.text === data.text);
    if (pending < 0) return { kind: 'visitor' };
    return {
      kind: 'confirmed',
      pending: this.pendingSends.splice(pending, 1)[0],
    };
  }

  /** @param {PendingSend} pending */
  sending(pending) {
    this.pendingSends.push(pending);
  }

  // Its answer came (or its failure): no longer waited for.
  /** @param {PendingSend} pending */
  settled(pending) {
    const index = this.pendingSends.indexOf(pending);
    if (index >= 0) this.pendingSends.splice(index, 1);
  }

  // -- the place in line, said at most every POSITION_ANNOUNCE_MS -----------------------------

  // How long to wait before the position may be said: 0 when now (`sayNow`, or long enough since
  // it last was), else until POSITION_ANNOUNCE_MS have passed.
  /**
   * @param {number} now
   * @param {boolean} sayNow
   */
  positionWait(now, sayNow) {
    if (sayNow || now - this.positionSpokenAt >= POSITION_ANNOUNCE_MS) return 0;
    return this.positionSpokenAt + POSITION_ANNOUNCE_MS - now;
  }

  // The position to say now, or 0: still in line and not said yet. `heardAt`: when it will be
  // heard (the view may hold it back until a focus change has been said).
  /** @param {number} heardAt */
  positionToSay(heardAt) {
    if (this.state !== 'queued' || this.positionSpoken === this.position) return 0;
    this.positionHeard(heardAt);
    return this.position;
  }
}

// -- the leave-a-message form ---------------------------------------------------------------------

// What is wrong with a left message: an e-mail address that cannot be one (it may be left out),
// no text.
/**
 * @param {string} address
 * @param {string} text
 */
export function leftMessageErrors(address, text) {
  return {
    emailInvalid: Boolean(address) && !EMAIL.test(address),
    textMissing: !text.trim(),
  };
}

// Outside the opening hours (docs/protocol.md, "Opening hours"): how many days from `now` the
// next opening is, by the visitor's own calendar (0: today); null without a usable `opens_at`.
// Rounded: a day across a daylight saving change is 23 or 25 hours long.
/**
 * @param {string | undefined} opensAt
 * @param {Date} now
 * @returns {{ when: Date, days: number } | null}
 */
export function nextOpening(opensAt, now) {
  const when = new Date(opensAt);
  if (!opensAt || Number.isNaN(when.getTime())) return null;
  /** @type {(date: Date) => number} */
  const midnight = (date) =>
    new Date(date.getFullYear(), date.getMonth(), date.getDate()).getTime();
  return { when, days: Math.round((midnight(when) - midnight(now)) / DAY_MS) };
}
