// Talking to a person (docs/accessibility.md A53–A58; the wire
// contract in docs/protocol.md, "Hand-off to a person").
//
// "Talk to a person" (in the Options section, conversation-tools.js, and under an answer that
// offers a person: offer(), drawn for actions.js) asks the server for a person: POST …/handoff answers queued, assigned or unavailable. While a hand-off is queued
// or assigned, and only then, the panel reads the conversation's event stream (GET …/events):
// the position in line, the agent joining, typing, each agent message (checked against its
// SHA-256, like an answer), the visitor's own messages (so other tabs show them) and the end.
// A read that ends or stalls is resumed with Last-Event-ID after a backoff (follow.js, as the
// panel's answers and the agents' console follow theirs); events are applied once
// each, in order of their sequence number (a duplicate is ignored; a gap is read again; a
// snapshot replaces the state). The composer's messages go to POST …/handoff/messages
// meanwhile (chat.js submit() hands them here). Nobody available, or outside the opening
// hours (said with when it opens): a form to leave a message (POST …/handoff/left-messages).
//
// What the events and answers make of the hand-off (its state, the order of the events, the
// pace of place-in-line announcements) is handoff-state.js's, which knows no DOM nor network;
// this module is its view: it follows the stream, checks messages, draws and speaks.
// Every state is said once, politely, through the panel's one Announcer (A53): no second
// live region. Loaded when the panel is ready (chat.js), so none of it is part of the
// panel's first open (tests/test_budgets.py); its stylesheet and strings load on first use.

import { ApiError, errorFrom, newRequestId } from './client.js';
import { button, element } from './dom.js';
import { follow } from './follow.js';
import { HandoffState, leftMessageErrors, nextOpening } from './handoff-state.js';
import { format } from './i18n.js';
import { lazyStrings, linkStylesheet } from './lazy-parts.js';
import { CONVERSATION_EVENT, ERROR } from './protocol.js';
import { reasonFor } from './refusals.js';
import { sha256Hex } from './sha256.js';

/** @typedef {import('./host.js').PanelHost} PanelHost */

// "Is typing" is shown this long after the last typing event (the console sends one at most
// every few seconds while the agent types).
const TYPING_SHOWN_MS = 6000;
// How long after moving focus a state waits to be said (Handoff.say).
const FOCUS_SETTLE_MS = 1000;
// The endings after which the visitor is asked "How was your conversation?": a person ended it
// (docs/protocol.md, "Satisfaction"; satisfaction.js).
const RATED_ENDINGS = ['ended', 'returned'];

const stylesheetUrl = new URL('./handoff.css', import.meta.url).href;

// The agent's name inside a sentence, in <bdi> (docs/accessibility.md A68): a Hebrew name in
// an English sentence, or a Latin one in Arabic, keeps its own order and moves no punctuation.
function isolateName(node, name) {
  const text = node.textContent;
  const at = name ? text.indexOf(name) : -1;
  if (at >= 0) {
    const bdi = document.createElement('bdi');
    bdi.textContent = name;
    node.replaceChildren(text.slice(0, at), bdi, text.slice(at + name.length));
  }
  return node;
}

const sha256OfText = (text) => sha256Hex(new TextEncoder().encode(text));

const handoffs = new WeakMap(); // panel → Handoff

/** @param {PanelHost} host */
function handoffOf(host) {
  let handoff = handoffs.get(host);
  if (!handoff) {
    handoff = new Handoff(host);
    handoffs.set(host, handoff);
    host.provide({ handoff }); // chat.js submit() asks it first
  }
  return handoff;
}

// chat.js, once the panel is ready: resume a hand-off the page was in before a reload. The
// server put its state in the panel's config (web.py, for the conversation its cookie names):
// no request at all when there is none.
/** @param {PanelHost} host */
export async function init(host) {
  const handoff = handoffOf(host);
  // The hand-off to resume, or a boolean (whether people take conversations): none to resume.
  const going = /** @type {import('./host.js').HandoffResume} */ (host.config.handoff);
  if (going?.conversation_id && going.conversation_id === host.client.conversationId) {
    await handoff.resume(going);
    // Ended by a person and not yet rated: asked again, shown without being said again.
    if (going.satisfaction) await handoff.askSatisfaction(going.satisfaction, false);
  }
}

// chat.js: a message the assistant refused with 409 handoff_active (a hand-off asked for in
// another tab or device; its answer's turn already gone) joins it and goes to the person.
/**
 * @param {PanelHost} host
 * @param {{ text: string, refs: import('./client.js').AttachmentRef[], question: Element | null }} message
 *   Its text and files, and the visitor's turn that showed it.
 */
export function reroute(host, message) {
  return handoffOf(host).reroute(message);
}

// chat.js restore(): a hand-off message of the conversation's history, in its place.
/**
 * @param {PanelHost} host
 * @param {import('./client.js').HistoryMessage} message
 */
export async function restoreTurn(host, message) {
  const handoff = handoffOf(host);
  handoff.model.seen.add(message.message_id);
  if (message.role !== 'agent') {
    host.addUserTurn(message.text, message.attachments).dataset.messageId = message.message_id;
    return;
  }
  await handoff.ready().catch(() => {}); // offline: the turn is drawn with the agent's name only
  handoff.addAgentTurn(message);
}

// conversation-tools.js: "Talk to a person" at the end of the Options section; `close`
// hides the section (its button would otherwise keep focus in a hidden section).
/**
 * @param {PanelHost} host
 * @param {HTMLElement} section
 * @param {() => void} close
 */
export async function addControl(host, section, close) {
  const handoff = handoffOf(host);
  const strings = await handoff.ready();
  section.append(
    button('button button--secondary handoff-talk', strings.talk, () => {
      close();
      handoff.focus(host.input);
      handoff.request();
    }),
  );
}

// actions.js: an answer's `handoff` offer (the kb backend's "I don't know"; docs/backends.md,
// "Offering a person"): a "Talk to a person" button under that answer that asks exactly as the
// Options control does. Said once, politely, as an action card is; silently after a reload.
/**
 * @param {PanelHost} host
 * @param {HTMLElement} container
 * @param {boolean} announce
 */
export async function offer(host, container, announce) {
  const handoff = handoffOf(host);
  let strings;
  try {
    strings = await handoff.ready();
  } catch {
    return; // offline: the Options control still offers a person
  }
  container.append(
    button('button button--secondary handoff-offer', strings.talk, () => {
      handoff.focus(host.input);
      handoff.request();
    }),
  );
  if (announce) host.announcer.cue(strings.offered);
}

class Handoff {
  /** @param {PanelHost} host */
  constructor(host) {
    this.host = host;
    /** @type {Record<string, any> | null} the hand-off's strings, once fetched (ready()) */
    this.strings = null;
    // What the stream and the answers made of the hand-off (handoff-state.js); this class shows
    // it and says it.
    this.model = new HandoffState();
    // client.js's, pinned to the conversation bound (bindConversation)
    /** @type {import('./client.js').ChatClient | null} */
    this.api = null;
    /** @type {import('./follow.js').Follower | null} while the stream is followed */
    this.follower = null;
    /** @type {AbortController | null} aborts following */
    this.stop = null;
    this.reading = false;
    /** @type {import('./handoff-state.js').ConversationEvent[]} the first read's, while catching up */
    this.backlog = [];
    /** @type {Promise<unknown>} events are applied one after the other */
    this.applying = Promise.resolve();
    this.positionTimer = 0;
    this.typingTimer = 0;
    this.focusedAt = 0;
    this.bar = null;
    /** @type {HTMLLIElement | null} the question after a hand-off a person ended (satisfaction.js) */
    this.satisfaction = null;
    host.on('conversation', () => this.forgetConversation());
    // Back online: resume at once rather than waiting out a backoff (as chat.js does for answers).
    window.addEventListener('online', () => this.follower?.wake());
  }

  // Orca drops a polite live region's text that arrives while it still presents a focus
  // change (heard in tests/e2e/test_handoff_widget.py, the Orca test): what is said right
  // after this module moved focus waits until that has settled.
  focus(node) {
    node.focus();
    this.focusedAt = Date.now();
  }

  say(text) {
    const wait = this.focusedAt + FOCUS_SETTLE_MS - Date.now();
    if (wait > 0) setTimeout(() => this.host.announcer.cue(text), wait);
    else this.host.announcer.cue(text);
  }

  get active() {
    return this.model.active;
  }

  // Its strings and stylesheet; rejects while the strings cannot be fetched (offline).
  async ready() {
    if (!this.strings) {
      const [strings] = await Promise.all([
        lazyStrings(this.host, 'handoff', 'handoff/'),
        linkStylesheet(stylesheetUrl),
      ]);
      if (!strings) throw new Error('the hand-off strings could not be fetched');
      this.strings = strings;
    }
    return this.strings;
  }

  agentName(name) {
    return name || this.model.agent || this.strings?.agentFallback || '';
  }

  // -- requesting and resuming -------------------------------------------------------------

  async request() {
    const host = this.host;
    const model = this.model;
    await this.ready();
    if (this.active || model.state === 'requesting') return;
    // With CONSENT_TEXT, asking for a person before any message makes the conversation: the
    // visitor's agreement first, as for a send (consent.js, loaded with the panel then; A120).
    if (host.config.consent && (await import('./consent.js')).hold(host)) return;
    this.removeForm();
    this.removeSatisfaction(); // a new hand-off: the one before can no longer be rated
    model.state = 'requesting';
    let body;
    try {
      await host.ensureConversation();
      this.bindConversation();
      body = await this.api.requestHandoff(newRequestId());
    } catch (error) {
      model.state = 'none';
      host.showAlert(format(this.strings.failed, { reason: await reasonFor(host, error) }));
      return;
    }
    model.state = 'none';
    if (body.state === 'unavailable') {
      this.showUnavailable(body.reason, body.opens_at);
      return;
    }
    model.requested(body);
    this.show(model.enter(body), true);
    this.read();
  }

  // After a reload, from the panel's config ({state, agent?, position?, seq}), quietly: the
  // visitor heard it before the reload; what happens next is said as usual.
  async resume(body) {
    await this.ready();
    this.bindConversation();
    if (body.state !== 'queued' && body.state !== 'assigned') return;
    this.show(this.model.resume(body), false);
    this.model.positionHeard(Date.now());
    this.read();
  }

  bindConversation() {
    const client = this.host.client;
    this.model.bind(client.conversationId);
    this.api = client.pinned();
  }

  // What a change of the state (handoff-state.js) shows and, with `say`, says.
  /**
   * @param {import('./handoff-state.js').HandoffChange} change
   * @param {boolean} say
   */
  show(change, say) {
    if (change.kind === 'entered') this.entered(change, say);
    else if (change.kind === 'ended') this.ended(change.agent, change.reason);
    else if (change.kind === 'lapsed') this.lapsed(change.agent);
    else if (change.kind === 'typing') this.showTyping(change.agent);
  }

  entered({ before, state, joined, queuedAnew }, say) {
    if (state === 'queued') this.setPosition(say && queuedAnew);
    else if (state === 'assigned' && joined && say) {
      const text = format(this.strings.assigned, { agent: this.agentName() });
      this.addNotice(text, this.agentName());
      this.say(text);
    }
    this.drawBar();
    if (before !== state) this.emitState();
  }

  emitState(reason) {
    const model = this.model;
    const detail = {
      // Never 'requesting': request() is back to 'none' before anything is said.
      state: /** @type {'none' | 'queued' | 'assigned'} */ (model.state),
      agent: model.agent,
      position: model.position,
    };
    if (reason) detail.reason = reason;
    this.host.emit('handoff', detail);
  }

  // The bar shows the new position at once; it is said now, or the latest one once
  // handoff-state.js allows (at most every 30 s).
  setPosition(sayNow) {
    this.drawBar();
    clearTimeout(this.positionTimer);
    const wait = this.model.positionWait(Date.now(), sayNow);
    if (wait) this.positionTimer = setTimeout(() => this.sayPosition(), wait);
    else this.sayPosition();
  }

  sayPosition() {
    // When it is heard: say() may wait for a focus change to settle.
    const heardAt = Math.max(Date.now(), this.focusedAt + FOCUS_SETTLE_MS);
    if (this.model.positionToSay(heardAt)) this.say(this.positionText());
  }

  positionText() {
    const strings = this.strings;
    const position = this.model.position;
    return position <= 1 ? strings.queuedNext : format(strings.queued, { position });
  }

  // The hand-off is over: back with the assistant. Said once, whoever ended it.
  ended(name, reason) {
    const strings = this.strings;
    const text = name ? format(strings.ended, { agent: name }) : strings.endedQueue;
    this.stopReading();
    clearTimeout(this.positionTimer);
    this.hideTyping();
    this.drawBar();
    this.addNotice(text, name);
    this.say(text);
    this.emitState(reason);
  }

  // The agent's console was gone past the grace period: back in line, in the old place
  // (handoff.queued follows with the position, shown in the bar).
  lapsed(agent) {
    const text = format(this.strings.lapsed, { agent: this.agentName(agent) });
    this.hideTyping();
    this.drawBar();
    this.addNotice(text, this.agentName(agent));
    this.say(text);
    this.emitState('timeout');
  }

  // The visitor leaves the line or ends the chat (DELETE …/handoff).
  async cancel() {
    const strings = this.strings;
    try {
      await this.api.cancelHandoff();
    } catch (error) {
      this.host.showAlert(format(strings.failed, { reason: await reasonFor(this.host, error) }));
      return;
    }
    this.focus(this.host.input);
    const model = this.model;
    this.show(model.finish(model.state === 'assigned' ? model.agent : '', 'visitor'), true);
  }

  // Start over (conversation-tools.js): the old conversation's hand-off ends with it.
  forgetConversation() {
    if (this.active) this.api.cancelHandoff().catch(() => {});
    this.stopReading();
    this.model.forget();
    clearTimeout(this.positionTimer);
    this.drawBar();
    this.removeForm();
    this.removeSatisfaction();
  }

  // -- the conversation's event stream -----------------------------------------------------

  stopReading() {
    this.reading = false;
    this.stop?.abort();
  }

  // Read and resume until the hand-off ends (follow.js: the stall timer, the backoff, the
  // resume). Only one follow at a time. A read resumes after the last event *applied* (each
  // message is checked against its SHA-256 first, one after the other), not the last read.
  read() {
    if (this.reading) return;
    this.reading = true;
    const config = this.host.config;
    const model = this.model;
    const stop = new AbortController();
    this.stop = stop;
    const follower = follow({
      request: ({ headers, signal }) =>
        this.api.conversationEvents({ after: model.lastSeq, headers, signal }),
      resumeId: () => (model.lastSeq ? `${model.conversationId}:${model.lastSeq}` : ''),
      signal: stop.signal,
      stallTimeoutMs: config.stallTimeoutMs,
      retryMs: config.retryMs,
      maxBackoffMs: config.maxBackoffMs,
      refusal: errorFrom,
      // The conversation is gone or the token refused: nothing to resume. Network errors,
      // stalls, 5xx and 429 are resumed.
      retryable: (error) =>
        !(error instanceof ApiError && error.status < 500 && error.status !== 429),
      ended: () => !this.reading || !this.active,
      onEvent: (event) => {
        if (model.catchUp) {
          this.backlog.push(event);
          return false;
        }
        const applied = this.applying.then(() => this.apply(event, follower));
        this.applying = applied.catch((error) => console.error('chat widget:', error));
        return applied;
      },
      onChunk: () => {
        if (model.catchUp && this.backlog.length) this.foldBacklog(follower);
      },
      settle: () => this.applying, // the last applied event's id is where the next read starts
    });
    this.follower = follower;
    follower.done
      .catch((error) => console.error('chat widget:', error))
      .finally(() => {
        if (this.follower === follower) this.reading = false;
      });
  }

  // The read in flight, as an AbortController: aborting it drops that read, which is resumed as
  // any dropped one (tests/e2e/test_handoff_widget.py drops it so, as the stall timer would).
  get controller() {
    return { abort: () => this.follower?.drop() };
  }

  // A stream read from 0 (no `seq` in the request's answer) replays the conversation's earlier
  // hand-offs too (handoff-state.js foldBacklog keeps what follows the last one that ended).
  // The server writes what it has in one chunk (HandoffService.event_stream), so the first
  // read holds it.
  foldBacklog(follower) {
    const events = this.model.foldBacklog(this.backlog);
    this.backlog = [];
    for (const event of events)
      this.applying = this.applying
        .then(() => this.apply(event, follower))
        .catch((error) => console.error('chat widget:', error));
  }

  // One event, in order. Returns whether it moved the state forward.
  /**
   * @param {import('./handoff-state.js').ConversationEvent} event
   * @param {import('./follow.js').Follower} follower
   */
  async apply(event, follower) {
    const model = this.model;
    const { verdict, seq } = model.place(event);
    if (verdict === 'duplicate') return false;
    if (verdict === 'gap') {
      follower.resumeNow(); // read again from the last applied one
      return false;
    }
    if (!this.reading) return false;
    const { type, data } = event;
    if (type === CONVERSATION_EVENT.CONVERSATION_SNAPSHOT) await this.applySnapshot(data);
    else if (
      type === CONVERSATION_EVENT.AGENT_MESSAGE ||
      type === CONVERSATION_EVENT.VISITOR_MESSAGE
    ) {
      if (!(await this.verified(data))) return false;
      this.showMessage(type === CONVERSATION_EVENT.AGENT_MESSAGE ? 'agent' : 'visitor', data, true);
    } else {
      const change = model.reduce(type, data);
      this.show(change, true);
      if (change.kind === 'ended' && RATED_ENDINGS.includes(change.reason))
        this.askSatisfaction(seq, true);
    }
    model.applied(seq);
    return true;
  }

  // -- "How was your conversation?" (satisfaction.js, loaded now) ----------------------------

  // `handoff`: the hand-off's `handoff.ended` seq; `announce`: said once (false after a reload).
  /**
   * @param {number} handoff
   * @param {boolean} announce
   */
  async askSatisfaction(handoff, announce) {
    this.removeSatisfaction();
    try {
      const { ask } = await import('./satisfaction.js');
      this.satisfaction = await ask(this.host, {
        api: this.api,
        handoff,
        announce,
        say: (text) => this.say(text),
        focus: (node) => this.focus(node),
      });
    } catch (error) {
      console.error('chat widget:', error); // offline: the module could not load; nothing asked
    }
  }

  removeSatisfaction() {
    this.satisfaction?.remove();
    this.satisfaction = null;
  }

  // A resume from an evicted position: the whole state and every message so far.
  async applySnapshot(data) {
    const { messages, change } = this.model.snapshot(data);
    for (const message of messages) {
      if (!(await this.verified(message))) continue;
      this.showMessage(message.role, message, true);
    }
    this.show(change(), true);
  }

  // The text is exactly what was sent (its SHA-256, as an answer's; docs/design.md).
  async verified(data) {
    if ((await sha256OfText(data.text)) === data.sha256) return true;
    this.host.showAlert(this.strings.integrity);
    return false;
  }

  showMessage(role, data, say) {
    const shown = this.model.message(role, data);
    if (shown.kind === 'agent') {
      this.hideTyping();
      this.addAgentTurn(data);
      if (!say) return;
      this.host.notifyHost(); // the launcher's unread count (A81)
      const agent = this.agentName(data.agent);
      // Announced whole, once, like a completed answer (A55); with announcements off
      // (Options, A35) a short cue instead.
      const off = this.host.announcer.mode === 'off';
      this.say(
        format(off ? this.strings.agentMessageCue : this.strings.agentMessage, {
          agent,
          text: data.text,
        }),
      );
    } else if (shown.kind === 'confirmed') {
      // This tab's send: its turn is there.
      shown.pending.item.dataset.messageId = data.message_id;
    } else if (shown.kind === 'visitor') {
      // Another tab's.
      const item = this.host.addUserTurn(data.text, data.attachments);
      item.dataset.messageId = data.message_id;
      this.host.scrollToEnd();
    }
  }

  addAgentTurn(message) {
    const host = this.host;
    const agent = this.agentName(message.agent);
    const item = element('li', 'turn turn--agent');
    item.dataset.messageId = message.message_id;
    item.append(
      ...host.whoSaid(agent, this.strings ? format(this.strings.agentSaid, { agent }) : agent),
      element('p', 'turn__body turn__body--plain', message.text),
    );
    // The person's words take their own direction (A68).
    /** @type {HTMLElement} */ (item.lastChild).dir = 'auto';
    this.host.addToTranscript(item);
    return item;
  }

  // A line in the transcript that is no one's turn: joined, left.
  addNotice(text, name) {
    this.host.addToTranscript(isolateName(element('li', 'handoff-notice', text), name));
  }

  // Shown, never announced (A54): typing is not news, the message is.
  showTyping(agent) {
    if (this.model.state !== 'assigned' || !this.bar) return;
    this.bar.typing.textContent = format(this.strings.typing, {
      agent: this.agentName(agent),
    });
    isolateName(this.bar.typing, this.agentName(agent));
    this.bar.typing.hidden = false;
    clearTimeout(this.typingTimer);
    this.typingTimer = setTimeout(() => this.hideTyping(), TYPING_SHOWN_MS);
  }

  hideTyping() {
    clearTimeout(this.typingTimer);
    if (this.bar) this.bar.typing.hidden = true;
  }

  // -- the bar above the composer: who the visitor is talking to, and the way back -------

  drawBar() {
    const host = this.host;
    const strings = this.strings;
    if (!this.active) {
      if (this.bar) this.bar.root.hidden = true;
      return;
    }
    if (!this.bar) {
      const root = element('div', 'handoff-bar');
      const status = element('p', 'handoff-bar__status');
      const typing = element('p', 'handoff-bar__typing');
      typing.hidden = true;
      const leave = button('button button--secondary handoff-bar__leave', '', () => this.cancel());
      root.append(status, typing, leave);
      host.form.before(root);
      this.bar = { root, status, typing, leave };
    }
    const bar = this.bar;
    bar.root.hidden = false;
    bar.root.dataset.state = this.model.state;
    if (this.model.state === 'queued') {
      bar.status.textContent = this.positionText();
      bar.leave.textContent = strings.leaveQueue;
    } else {
      const agent = this.agentName();
      bar.status.textContent = format(strings.talking, { agent });
      bar.leave.textContent = format(strings.endChat, { agent });
      isolateName(bar.status, agent);
      isolateName(bar.leave, agent);
    }
  }

  // -- the visitor's messages to the person --------------------------------------------------

  // chat.js: the assistant refused a message with 409 handoff_active — a hand-off this panel
  // did not know of (asked for in another tab or on another device). The answer's turn is gone
  // (chat.js AnswerRun.reroute); the panel joins the hand-off (a request while one is going on
  // only says where it is) and the message goes to the person, with the files it carried
  // (attachments.js: its turn shows them).
  async reroute({ text, refs, question }) {
    await this.request();
    if ((!text && !refs.length) || !this.active) return;
    if (question?.classList.contains('turn--user')) {
      const pending = { text, item: question, refs };
      this.model.sending(pending);
      this.post(text, pending);
    } else {
      this.send(text);
    }
  }

  // chat.js submit(): while a person has the conversation, the text and the uploaded files
  // (attachments.js take()) go to them. Returns false when no hand-off is active (the assistant
  // answers).
  send(text, files = []) {
    if (!this.active) return false;
    const host = this.host;
    host.input.value = '';
    const item = host.addUserTurn(text, files);
    host.scrollToEnd();
    const pending = { text, item, refs: files.map((file) => file.ref) };
    this.model.sending(pending);
    this.post(text, pending);
    return true;
  }

  async post(text, pending) {
    const host = this.host;
    let body;
    try {
      // Network errors and 5xx are retried with the same request id: sent once (idempotent).
      body = await this.api.sendHandoffMessage({
        request_id: newRequestId(),
        text,
        ...(pending.refs?.length ? { attachments: pending.refs } : {}),
      });
    } catch (error) {
      if (error.code !== ERROR.HANDOFF_NOT_ACTIVE.code) return this.sendFailed(pending, error);
      // The person left meanwhile: the assistant answers this one, with its files.
      this.model.settled(pending);
      this.show(this.model.finish(this.model.agent, 'ended'), true);
      const request = { requestId: newRequestId(), text };
      if (pending.refs?.length)
        request.body = {
          request_id: request.requestId,
          text,
          attachments: pending.refs,
        };
      host.startRun({ request });
      return;
    }
    this.model.seen.add(body.message_id);
    pending.item.dataset.messageId = body.message_id;
    this.model.settled(pending);
    host.filesSent(pending.refs); // sent to the person: they leave the list
    if (body.sha256 && body.sha256 !== (await sha256OfText(text)))
      host.showAlert(this.strings.integrity);
  }

  async sendFailed(pending, error) {
    this.model.settled(pending);
    pending.item.dataset.state = 'failed';
    const reason = await reasonFor(this.host, error);
    this.host.showAlert(format(this.strings.sendFailed, { reason }));
  }

  // -- nobody available: leave a message -----------------------------------------------------

  // Outside the opening hours (docs/protocol.md, "Opening hours"): when it opens next, in the
  // panel's language and the visitor's own time zone (Intl's default), "today", "tomorrow" or
  // the weekday (it is never more than a week away). No usable `opens_at`: the plain words.
  closedText(opensAt) {
    const strings = this.strings;
    const opening = nextOpening(opensAt, new Date());
    if (!opening) return strings.unavailable;
    const { when, days } = opening;
    const lang = this.host.config.lang;
    const time = new Intl.DateTimeFormat(lang, {
      hour: 'numeric',
      minute: '2-digit',
    }).format(when);
    const day = new Intl.DateTimeFormat(lang, { weekday: 'long' }).format(when);
    const template =
      days <= 0 ? strings.closedToday : days === 1 ? strings.closedTomorrow : strings.closedOn;
    return format(template, { day, time });
  }

  showUnavailable(reason, opensAt) {
    const host = this.host;
    const strings = this.strings;
    if (reason === 'disabled') {
      this.addNotice(strings.disabled);
      this.say(strings.disabled);
      this.emitState('disabled');
      return;
    }
    this.removeForm();
    const said = reason === 'closed' ? this.closedText(opensAt) : strings.unavailable;
    const item = element('li', 'handoff-notice handoff-leave');
    const text = element('p', 'handoff-leave__text', said);
    text.id = 'handoff-unavailable';
    const form = element('form', 'handoff-form');
    form.noValidate = true; // errors are said our way: in words, next to the field (A57)
    form.setAttribute('aria-label', strings.formTitle);
    const email = this.field(form, 'email', strings.email, strings.emailHint);
    /** @type {HTMLInputElement} */ (email.input).type = 'email';
    email.input.autocomplete = 'email';
    const message = this.field(form, 'text', strings.message, '');
    const buttons = element('div', 'handoff-form__buttons');
    const submit = element('button', 'button', strings.submit);
    submit.type = 'submit';
    buttons.append(
      submit,
      button('button button--secondary', strings.notNow, () => {
        this.removeForm();
        host.input.focus();
      }),
    );
    form.append(buttons);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.leaveMessage(email, message, submit);
    });
    item.append(text, form);
    host.addToTranscript(item);
    this.form = item;
    host.scrollToEnd();
    this.focus(email.input);
    this.say(said);
    this.emitState(reason === 'closed' ? 'closed' : 'unavailable');
  }

  // A labelled field with its hint and its error (both in its description).
  field(form, name, label, hint) {
    const id = `handoff-${name}`;
    const wrapper = element('div', 'handoff-form__field');
    const labelNode = element('label', 'handoff-form__label', label);
    labelNode.htmlFor = id;
    const input = element(name === 'text' ? 'textarea' : 'input', 'handoff-form__input');
    input.id = id;
    input.name = name;
    if (name === 'text') {
      /** @type {HTMLTextAreaElement} */ (input).rows = 3;
      input.maxLength = this.host.input.maxLength;
      input.required = true;
    }
    const error = element('p', 'handoff-form__error');
    error.id = `${id}-error`;
    error.hidden = true;
    const described = [error.id];
    wrapper.append(labelNode);
    if (hint) {
      const hintNode = element('p', 'handoff-form__hint', hint);
      hintNode.id = `${id}-hint`;
      described.unshift(hintNode.id);
      wrapper.append(hintNode);
    }
    input.setAttribute('aria-describedby', described.join(' '));
    wrapper.append(input, error);
    form.append(wrapper);
    return { input, error };
  }

  setError(field, text) {
    field.error.textContent = text;
    field.error.hidden = !text;
    if (text) field.input.setAttribute('aria-invalid', 'true');
    else field.input.removeAttribute('aria-invalid');
  }

  async leaveMessage(email, message, submit) {
    const host = this.host;
    const strings = this.strings;
    const address = email.input.value.trim();
    const text = message.input.value;
    const { emailInvalid, textMissing } = leftMessageErrors(address, text);
    const emailError = emailInvalid ? strings.emailInvalid : '';
    const textError = textMissing ? strings.textRequired : '';
    this.setError(email, emailError);
    this.setError(message, textError);
    if (emailError || textError) {
      // Focus to the first field in error; the alert says every error once (A57).
      (emailError ? email : message).input.focus();
      host.showAlert([emailError, textError].filter(Boolean).join(' '));
      return;
    }
    submit.disabled = true;
    this.model.leaveRequestId ||= newRequestId();
    const body = { request_id: this.model.leaveRequestId, text };
    if (address) body.email = address;
    try {
      await host.ensureConversation();
      this.bindConversation();
      await this.api.leaveMessage(body);
    } catch (error) {
      submit.disabled = false;
      if (error.code === ERROR.INVALID_EMAIL.code) {
        this.setError(email, strings.emailInvalid);
        email.input.focus();
        host.showAlert(strings.emailInvalid);
      } else {
        host.showAlert(format(strings.leaveFailed, { reason: await reasonFor(host, error) }));
      }
      return;
    }
    this.model.leaveRequestId = '';
    const thanks = address ? strings.leftWithEmail : strings.left;
    this.form.replaceChildren(element('p', 'handoff-leave__text', thanks));
    this.form = null;
    this.focus(host.input);
    this.say(thanks);
    this.emitState('left');
  }

  removeForm() {
    this.form?.remove();
    this.form = null;
  }
}
