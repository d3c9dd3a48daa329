// The agent console at /agent (docs/agents.md; docs/accessibility.md A46–A52, A61–A63).
//
// One page, four parts: the queue (polled every 3 s, which is also the agent's presence
// heartbeat), the agent's own conversations, the open conversation (its transcript read
// once, then followed on the conversation's event stream) and the inbox of left messages.
// The rules are the widget's: text from visitors and agents only ever becomes textContent;
// every word comes from static/agent/i18n/<lang>.json, in the language the server chose
// for the page (config.lang, <html lang>); news is said once through one polite
// region (never per poll), failures once through one assertive region; nothing moves focus
// except the agent's own action, and then to a heading that says where they are.

import { element } from '../widget/dom.js';
import { format, plural } from '../widget/i18n.js';
import { CONVERSATION_EVENT, ERROR } from '../widget/protocol.js';
import { sha256Hex } from '../widget/sha256.js';
import { formatSize } from '../widget/sizes.js';
import { AgentApi, ApiError, consoleStrings, followConversation, newRequestId } from './api.js';
import { Notifier } from './notify.js';

// docs/agents.md: the queue poll is the presence heartbeat; AGENT_PRESENCE_SECONDS (30 s by
// default) must be well above it.
const POLL_MS = 3000;
// The inbox's page, and the most one request may ask for (GET /agent/api/inbox?limit=).
const INBOX_PAGE = 50;
const INBOX_PAGE_MAX = 200;
// agent.typing is sent at most this often while the agent types (the visitor's widget shows
// it for a little longer than that).
const TYPING_INTERVAL_MS = 3000;
// State events that arrive together (a snapshot, or a reconnect after a drop) are settled first,
// so only a change of the conversation's state is said, never each step of its history.
const STATE_SETTLE_MS = 300;

/** @type {(selector: string, root?: ParentNode) => any} */
const $ = (selector, root = document) => root.querySelector(selector);

// A sentence with a name or a visitor's text in it, each value in its own <bdi> (HTML "The bdi
// element"): a Latin name in an Arabic sentence, or Hebrew text in an English one, keeps its own
// direction without reordering the words around it (docs/accessibility.md A92). The values stay
// text (textContent), and the node is rewritten only when its text changes, so a poll that
// changed nothing touches nothing.
function setIsolated(node, template, values = {}) {
  if (node.textContent === format(template, values)) return;
  const parts = [];
  let start = 0;
  for (const match of String(template).matchAll(/\{(\w+)\}/g)) {
    if (!(match[1] in values)) continue;
    parts.push(template.slice(start, match.index), element('bdi', '', String(values[match[1]])));
    start = match.index + match[0].length;
  }
  parts.push(String(template).slice(start));
  node.replaceChildren(...parts.filter((part) => part !== ''));
}

// Who the visitor is (docs/agents.md, "Known visitors"): the name and email the site vouched
// for with its identity token, each as text in its own <bdi> (a name may be `<b>…`: it stays
// those characters), else "Anonymous visitor". The subject names one with no name.
function showVisitor(node, strings, visitor) {
  if (!visitor) return setIsolated(node, strings.visitorAnonymous);
  const name = visitor.name || visitor.subject;
  if (visitor.email) setIsolated(node, strings.visitorKnown, { name, email: visitor.email });
  else setIsolated(node, strings.visitorKnownNoEmail, { name });
}

// Minutes since an ISO time, by this browser's clock (the server's `waited_seconds`, when it
// sends it, is preferred: clocks differ).
function minutesWaiting(entry, now) {
  if (typeof entry.waiting_seconds === 'number') return Math.floor(entry.waiting_seconds / 60);
  const since = Date.parse(entry.waiting_since);
  return Number.isFinite(since) ? Math.max(0, Math.floor((now - since) / 60000)) : 0;
}

// A live region written as the widget writes its own (docs/testing.md, "A real screen
// reader": Chromium is silent when a polite region gets the same text again, so it is
// emptied first and written in a later task); messages queue, one per second at most.
class Region {
  constructor(node, intervalMs = 1000) {
    this.node = node;
    this.intervalMs = intervalMs;
    this.queue = [];
    this.busy = false;
  }

  say(text) {
    if (!text) return;
    this.queue.push(text);
    if (!this.busy) this.next();
  }

  next() {
    const text = this.queue.shift();
    if (text === undefined) {
      this.busy = false;
      return;
    }
    this.busy = true;
    this.node.textContent = '';
    setTimeout(() => {
      this.node.textContent = text;
      setTimeout(() => this.next(), this.intervalMs);
    }, 50);
  }
}

class AgentConsole {
  constructor(config, strings) {
    this.config = config;
    this.s = strings;
    // The page's language (<html lang>, chosen by the server: docs/agents.md "Languages"):
    // plural forms and dates follow it.
    this.lang = config.lang || document.documentElement.lang || 'en';
    this.api = new AgentApi({ apiBase: config.apiBase, csrfToken: config.csrfToken });
    this.root = $('[data-agent-console]');
    this.status = new Region($('[data-agent-status]'));
    this.alert = new Region($('[data-agent-alert]'));
    this.notifier = new Notifier({
      sound: $('[data-agent-sound]'),
      desktop: $('[data-agent-desktop]'),
      title: strings.notifyTitle,
      onDenied: () => this.alert.say(strings.desktopDenied),
    });
    this.queueList = $('[data-agent-queue]');
    this.mineList = $('[data-agent-mine]');
    this.inboxList = $('[data-agent-inbox]');
    this.queueItems = new Map(); // conversation id → <li>
    this.mineItems = new Map();
    this.inboxItems = new Map(); // left message id → <li>
    this.seenWaiting = null; // ids already said; null until the first poll
    this.lastQueueMessage = new Map(); // conversation id → the last visitor message said
    this.inboxUnreplied = null;
    this.inboxCursor = null; // where the next older page of the inbox starts
    this.open = null; // the open conversation (see openConversation)
    this.pollTimer = 0;
    this.signedOut = false;
  }

  start() {
    // The page's fixed words are rendered by the server in the same language
    // (templates/agent.html); this code writes only what changes.
    const agent = this.config.agent || {};
    setIsolated($('[data-agent-who]'), this.s.signedInAs, {
      name: agent.display_name || agent.name || '',
    });
    $('[data-agent-csrf]').value = this.config.csrfToken || '';
    this.showNoConversation();
    this.bindReply();
    $('[data-agent-inbox-older]').addEventListener('click', () => this.loadOlderInbox());
    this.poll().finally(() => {
      this.root.dataset.ready = 'true';
    });
    this.loadInbox();
  }

  // -- failures -------------------------------------------------------------------------

  fail(error) {
    if (error instanceof ApiError && error.status === 401) {
      this.sessionEnded();
      return;
    }
    if (!(error instanceof ApiError)) {
      this.alert.say(this.s.errorNetwork);
      return;
    }
    // The server's messages are English, for logs and API clients; the agent hears the
    // console's own sentence for the error's stable code (docs/protocol.md, "Errors").
    const errors = this.s.errors || {};
    this.alert.say(
      Object.hasOwn(errors, error.code)
        ? errors[error.code]
        : format(this.s.errorUnknown, { code: error.code }),
    );
  }

  // The session expired or was signed out elsewhere: stop everything and offer the sign-in
  // page (a link: the agent chooses when to leave the page).
  sessionEnded() {
    if (this.signedOut) return;
    this.signedOut = true;
    clearTimeout(this.pollTimer);
    this.closeStream();
    const note = element('p', 'console__session-ended');
    note.append(`${this.s.errorSession} `);
    const link = element('a', '', this.s.signInAgain);
    link.href = location.pathname; // this page, the console: its sign-in when signed out
    note.append(link);
    this.root.prepend(note);
    this.alert.say(this.s.errorSession);
  }

  // -- the queue and the agent's conversations --------------------------------------------

  async poll() {
    clearTimeout(this.pollTimer);
    try {
      const queue = await this.api.queue();
      this.renderQueue(queue.waiting || []);
      this.renderMine(queue.mine || []);
      this.noteInbox(queue.inbox_unreplied);
    } catch (error) {
      // A poll that fails is tried again at the next tick; it is said once per outage.
      if (error instanceof ApiError && error.status === 401) return this.sessionEnded();
      if (!this.pollFailing) this.fail(error);
      this.pollFailing = true;
    }
    if (!this.signedOut) this.pollTimer = setTimeout(() => this.poll(), POLL_MS);
  }

  renderQueue(waiting) {
    const now = Date.now();
    const ids = new Set(waiting.map((entry) => entry.conversation_id));
    this.pollFailing = false;
    this.removeMissing(this.queueItems, ids, '#queue-heading');
    let fresh = 0;
    waiting.forEach((entry, index) => {
      const id = entry.conversation_id;
      let item = this.queueItems.get(id);
      if (!item) {
        item = this.queueItem(id);
        this.queueItems.set(id, item);
        if (this.seenWaiting && !this.seenWaiting.has(id)) fresh += 1;
      }
      this.updateQueueItem(item, entry, index + 1, now);
      // Oldest first, as the server lists them; a node is moved only when out of place,
      // since moving the focused button would drop its focus.
      if (this.queueList.children[index] !== item) {
        this.queueList.insertBefore(item, this.queueList.children[index] || null);
      }
      this.sayQueueMessage(id, entry.last_visitor_message);
    });
    $('[data-agent-queue-empty]').hidden = waiting.length > 0;
    // Said once: the first poll says how many wait, later polls only who is new.
    if (this.seenWaiting === null) {
      if (waiting.length)
        this.status.say(plural(this.s.announceWaiting, waiting.length, this.lang));
      this.seenWaiting = new Set(ids);
    } else if (fresh) {
      const text = plural(this.s.announceNewVisitor, fresh, this.lang);
      this.status.say(text);
      this.notifier.notify(text);
    }
    for (const id of ids) this.seenWaiting.add(id);
  }

  // A waiting visitor's newest message is said once, when it changes (not at the first
  // sight of the conversation: "a new visitor is waiting" says that).
  sayQueueMessage(id, text) {
    const known = this.lastQueueMessage.has(id);
    const before = this.lastQueueMessage.get(id);
    this.lastQueueMessage.set(id, text ?? null);
    if (!known || !text || text === before || this.seenWaiting === null) return;
    if (!this.seenWaiting.has(id)) return;
    const said = format(this.s.announceQueueMessage, { text });
    this.status.say(said);
    this.notifier.notify(said);
  }

  queueItem(id) {
    const item = element('li', 'queue__item');
    item.dataset.conversationId = id;
    item.append(
      element('p', 'queue__wait'),
      element('p', 'queue__visitor'),
      element('p', 'queue__last'),
    );
    const claim = element('button', 'button', this.s.claim);
    claim.type = 'button';
    claim.dataset.agentClaim = '';
    claim.addEventListener('click', () => this.claim(id, claim));
    item.append(claim);
    return item;
  }

  updateQueueItem(item, entry, position, now) {
    const minutes = minutesWaiting(entry, now);
    const wait =
      minutes < 1 ? this.s.waitingLessThanMinute : plural(this.s.waiting, minutes, this.lang);
    const waitText = `${position}. ${wait[0].toUpperCase()}${wait.slice(1)}`;
    const wait_ = $('.queue__wait', item);
    if (wait_.textContent !== waitText) wait_.textContent = waitText;
    showVisitor($('.queue__visitor', item), this.s, entry.visitor);
    const last_ = $('.queue__last', item);
    if (entry.last_visitor_message) {
      setIsolated(last_, this.s.lastMessage, { text: entry.last_visitor_message });
    } else {
      setIsolated(last_, this.s.noMessageYet);
    }
    const label = format(this.s.claimLabel, { position, wait });
    const claim = $('[data-agent-claim]', item);
    if (claim.getAttribute('aria-label') !== label) claim.setAttribute('aria-label', label);
  }

  // Entries gone from a list since the last poll go; if one held the focus, the focus goes
  // to the list's heading rather than to the page's start.
  removeMissing(items, ids, headingSelector) {
    for (const [id, item] of items) {
      if (ids.has(id)) continue;
      const hadFocus = item.contains(document.activeElement);
      item.remove();
      items.delete(id);
      if (hadFocus) $(headingSelector).focus();
    }
  }

  renderMine(mine) {
    const ids = new Set(mine.map((entry) => entry.conversation_id));
    this.removeMissing(this.mineItems, ids, '#mine-heading');
    mine.forEach((entry, index) => {
      const id = entry.conversation_id;
      let item = this.mineItems.get(id);
      if (!item) {
        item = element('li', 'queue__item');
        item.dataset.conversationId = id;
        const name = element('p', 'queue__wait', this.conversationName(id));
        const last = element('p', 'queue__last');
        const open = element('button', 'button button--secondary', this.s.open);
        open.type = 'button';
        open.dataset.agentOpen = '';
        open.setAttribute(
          'aria-label',
          format(this.s.openLabel, { name: this.conversationName(id) }),
        );
        open.addEventListener('click', () => this.openConversation(id));
        item.append(name, element('p', 'queue__visitor'), last, open);
        this.mineItems.set(id, item);
      }
      showVisitor($('.queue__visitor', item), this.s, entry.visitor);
      // The last visitor message, when the server lists one for a held conversation.
      const lastNode = $('.queue__last', item);
      lastNode.hidden = !entry.last_visitor_message;
      if (entry.last_visitor_message) {
        setIsolated(lastNode, this.s.lastMessage, { text: entry.last_visitor_message });
      } else {
        lastNode.textContent = '';
      }
      if (this.mineList.children[index] !== item) {
        this.mineList.insertBefore(item, this.mineList.children[index] || null);
      }
    });
    $('[data-agent-mine-empty]').hidden = mine.length > 0;
  }

  // A conversation's name in the console: the end of its id, enough to tell a few apart.
  conversationName(id) {
    return format(this.s.conversationName, { id: id.slice(-6) });
  }

  async claim(id, button) {
    if (button.getAttribute('aria-disabled') === 'true') return; // a press in flight
    button.setAttribute('aria-disabled', 'true');
    const note = $('[data-agent-queue-note]');
    try {
      await this.api.claim(id);
    } catch (error) {
      button.removeAttribute('aria-disabled');
      if (error instanceof ApiError && error.code === ERROR.ALREADY_CLAIMED.code) {
        // The claim is decided once by the server (a compare-and-set): the loser is told who
        // won, in words, and the entry leaves the queue at once.
        const agent = error.details?.agent || error.details?.display_name;
        const text = agent ? format(this.s.alreadyTaken, { agent }) : this.s.alreadyTakenUnknown;
        setIsolated(note, agent ? this.s.alreadyTaken : this.s.alreadyTakenUnknown, { agent });
        note.hidden = false;
        this.removeMissing(
          this.queueItems,
          new Set([...this.queueItems.keys()].filter((k) => k !== id)),
          '#queue-heading',
        );
        this.alert.say(text);
        return;
      }
      this.fail(error);
      return;
    }
    note.hidden = true;
    note.textContent = '';
    this.status.say(this.s.announceClaimed);
    await this.openConversation(id, { focus: true });
    this.poll();
  }

  // -- the open conversation ------------------------------------------------------------

  showNoConversation() {
    $('[data-agent-conversation-heading]').textContent = this.s.conversationHeading;
    const state = $('[data-agent-conversation-state]');
    state.textContent = this.s.noConversation;
    state.hidden = false;
    $('[data-agent-visitor]').hidden = true;
    $('[data-agent-transcript]').hidden = true;
    $('[data-agent-reply]').hidden = true;
    delete this.root.dataset.conversation;
  }

  closeStream() {
    if (this.open?.stream) this.open.stream.close();
    if (this.open?.settleTimer) clearTimeout(this.open.settleTimer);
  }

  async openConversation(id, { focus = true } = {}) {
    if (this.open?.id === id) {
      if (focus) $('#conversation-heading').focus();
      return;
    }
    this.closeStream();
    let body;
    try {
      body = await this.api.conversation(id);
    } catch (error) {
      this.fail(error);
      return;
    }
    const open = {
      id,
      messages: new Map(), // message id → <li>
      state: body.state,
      shownState: body.state,
      settleTimer: 0,
      stream: null,
    };
    this.open = open;
    this.root.dataset.conversation = id;
    $('[data-agent-conversation-heading]').textContent = format(this.s.conversationHeadingWith, {
      name: this.conversationName(id),
    });
    const visitor = $('[data-agent-visitor]');
    showVisitor(visitor, this.s, body.visitor);
    visitor.hidden = false;
    const transcript = $('[data-agent-transcript]');
    transcript.replaceChildren();
    transcript.hidden = false;
    for (const message of body.messages || []) this.addMessage(message, { verify: false });
    for (const answer of body.satisfaction || []) this.addSatisfaction(answer);
    this.showState();
    if (focus) $('#conversation-heading').focus();
    // The transcript is the conversation as of event `last_seq` (read with it in one store
    // read, docs/agents.md "Opening a conversation"): the stream starts right after it, so
    // no earlier event is replayed and none that came while the page read it is missed.
    const lastEventId = Number.isInteger(body.last_seq) ? `${id}:${body.last_seq}` : '';
    open.stream = followConversation(this.config.apiBase, id, {
      lastEventId,
      stallTimeoutMs: this.config.stallTimeoutMs,
      onEvent: (type, data) => this.onEvent(open, type, data),
      onState: (state) => {
        if (this.open !== open) return;
        if (state === 'lost') this.status.say(this.s.connectionLost);
      },
    });
  }

  // A transcript entry: who (a visible label), then the text as typed (white-space kept).
  addMessage(message, { verify = true } = {}) {
    const open = this.open;
    const files = message.attachments || [];
    if (!open || (!message.text && !files.length)) return null;
    const id = message.message_id;
    if (id && open.messages.has(id)) return null; // already shown: a replay, never twice
    const role = message.role === 'user' ? 'visitor' : message.role;
    const item = element('li', `transcript__item transcript__item--${role}`);
    if (id) item.dataset.messageId = id;
    const mine = role === 'agent' && message.agent === this.config.agent?.display_name;
    const who = element('p', 'transcript__who');
    if (role === 'agent' && !mine && message.agent) {
      who.append(element('bdi', '', message.agent)); // another agent's name, isolated (A92)
    } else {
      who.textContent =
        role === 'visitor'
          ? this.s.roleVisitor
          : role === 'assistant'
            ? this.s.roleAssistant
            : mine
              ? this.s.roleAgentYou
              : this.s.roleAgent;
    }
    // Typed text reads in its own direction, whatever the console's (A92).
    const text = element('p', 'transcript__text', message.text);
    text.dir = 'auto';
    item.append(who);
    if (message.text) item.append(text);
    if (files.length) item.append(this.fileList(open.id, files));
    if (message.context) item.append(this.contextList(message.context));
    $('[data-agent-transcript]').append(item);
    if (id) open.messages.set(id, item);
    if (verify && message.sha256) this.verify(item, message.text, message.sha256);
    return item;
  }

  // The host page's context a question came with (docs/agents.md, "The page's context"): the
  // site's facts as a list of "key: value", plain text, each part isolated in a <bdi> and read
  // in its own direction (docs/accessibility.md A130).
  contextList(context) {
    const list = element('ul', 'transcript__context');
    list.setAttribute('aria-label', this.s.contextLabel);
    for (const [key, value] of Object.entries(context)) {
      const item = element('li', '');
      item.append(element('bdi', '', key), ': ', element('bdi', '', String(value)));
      list.append(item);
    }
    return list;
  }

  // The visitor's answer to "How was your conversation?" (docs/agents.md, "Satisfaction"): at
  // the end of the transcript, as text — who, the rating in words, their comment in its own
  // direction (A127). Once per hand-off: returns null for one already shown.
  addSatisfaction(answer) {
    const open = this.open;
    const key = `satisfaction:${answer.handoff}`;
    if (!open || open.messages.has(key)) return null;
    const item = element('li', 'transcript__item transcript__item--satisfaction');
    item.dataset.satisfaction = String(answer.rating);
    item.append(
      element('p', 'transcript__who', this.s.roleSatisfaction),
      element(
        'p',
        'transcript__text',
        format(this.s.satisfactionRating, this.ratingWords(answer.rating)),
      ),
    );
    if (answer.comment) {
      const comment = element('p', 'transcript__text transcript__comment', answer.comment);
      comment.dir = 'auto';
      item.append(comment);
    }
    $('[data-agent-transcript]').append(item);
    open.messages.set(key, item);
    return item;
  }

  // A rating (1–5) as the console says it: `{rating}` and its word, `{word}`.
  ratingWords(rating) {
    return { rating, word: this.s[`satisfaction${rating}`] || '' };
  }

  // The files a visitor sent with a question (docs/agents.md, "Files the visitor sent"): each a
  // link that downloads it with the agent's session, its name isolated in a <bdi> (A92), its
  // kind and size in the console's language; an image also shown, its alternative text the
  // visitor's description or else its name (WCAG 2.2 SC 1.1.1).
  fileList(conversationId, files) {
    const list = element('ul', 'transcript__files');
    list.setAttribute('aria-label', this.s.filesLabel);
    for (const file of files) {
      const url = `${this.config.apiBase}/conversations/${encodeURIComponent(conversationId)}/attachments/${encodeURIComponent(file.attachment_id)}`;
      const item = element('li', 'transcript__file');
      if (['png', 'jpeg', 'webp', 'gif'].includes(file.type)) {
        const image = element('img', 'transcript__thumb');
        image.alt = file.description || file.name;
        image.loading = 'lazy';
        image.src = url;
        item.append(image);
      }
      const link = element('a', 'transcript__download');
      link.href = url;
      link.download = file.name;
      const kind = file.type === 'text' ? this.s.fileKindText : file.type.toUpperCase();
      link.append(element('bdi', '', file.name), ` (${kind}, ${formatSize(file.size, this.lang)})`);
      item.append(link);
      list.append(item);
    }
    return list;
  }

  // The exactness check answers get (docs/design.md): the text shown is the text whose
  // SHA-256 the server sent; a mismatch is shown and said, never silently kept.
  async verify(item, text, expected) {
    const actual = await sha256Hex(new TextEncoder().encode(text));
    if (actual === expected) {
      item.dataset.verified = 'true';
      return;
    }
    item.dataset.verified = 'false';
    item.append(element('p', 'transcript__error', this.s.notVerified));
    this.alert.say(this.s.notVerified);
  }

  onEvent(open, type, data) {
    if (this.open !== open) return;
    switch (type) {
      case CONVERSATION_EVENT.VISITOR_MESSAGE: {
        const item = this.addMessage({ ...data, role: 'visitor' });
        if (item) {
          const text = format(this.s.announceVisitorMessage, { text: data.text });
          this.status.say(text);
          this.notifier.notify(text);
        }
        break;
      }
      case CONVERSATION_EVENT.AGENT_MESSAGE: {
        const pending = open.messages.get(data.message_id);
        if (pending && pending.dataset.pending === 'true') {
          delete pending.dataset.pending;
          this.verify(pending, data.text, data.sha256);
        } else {
          this.addMessage({ ...data, role: 'agent' });
        }
        break;
      }
      case CONVERSATION_EVENT.CONVERSATION_SNAPSHOT:
        for (const message of data.messages || []) this.addMessage(message);
        this.setState(open, data.state, null);
        break;
      case CONVERSATION_EVENT.HANDOFF_QUEUED:
        this.setState(open, 'queued', null);
        break;
      case CONVERSATION_EVENT.HANDOFF_ASSIGNED:
        this.setState(open, 'assigned', null);
        break;
      case CONVERSATION_EVENT.HANDOFF_ENDED:
        this.setState(open, 'ended', data.reason);
        break;
      case CONVERSATION_EVENT.HANDOFF_SATISFACTION:
        // Said once, politely (A127): the rating is news to the agent who ended the chat.
        if (this.addSatisfaction(data))
          this.status.say(format(this.s.announceSatisfaction, this.ratingWords(data.rating)));
        break;
      default:
        break; // agent.typing is this agent's own; others are not the console's
    }
  }

  setState(open, state, reason) {
    open.state = state;
    open.reason = reason;
    clearTimeout(open.settleTimer);
    open.settleTimer = setTimeout(() => {
      if (this.open !== open || open.shownState === open.state) return;
      open.shownState = open.state;
      this.showState();
      // `idle`: a queued visitor with no stream open for HANDOFF_QUEUE_IDLE_SECONDS (docs/protocol.md).
      if (open.state === 'ended' && (open.reason === 'visitor' || open.reason === 'idle'))
        this.status.say(this.s.visitorLeft);
      else if (open.state === 'ended' && open.reason === 'timeout')
        this.status.say(this.s.released);
      else if (open.state === 'queued') this.status.say(this.s.released);
    }, STATE_SETTLE_MS);
  }

  showState() {
    const open = this.open;
    const state = $('[data-agent-conversation-state]');
    const text =
      open.shownState === 'assigned'
        ? this.s.stateAssigned
        : open.shownState === 'queued'
          ? this.s.stateQueued
          : this.s.stateEnded;
    state.textContent = text;
    state.hidden = false;
    const reply = $('[data-agent-reply]');
    const active = open.shownState === 'assigned';
    if (!active && reply.contains(document.activeElement)) $('#conversation-heading').focus();
    reply.hidden = !active;
    this.root.dataset.conversationState = open.shownState;
  }

  // -- the reply box ---------------------------------------------------------------------

  bindReply() {
    const form = $('[data-agent-reply]');
    const input = $('[data-agent-reply-input]');
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.sendReply();
    });
    // Enter sends, Shift+Enter adds a line (as the widget's composer, A9); not while an
    // input method composes.
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.sendReply();
      }
    });
    input.addEventListener('input', () => this.typing());
    $('[data-agent-end]').addEventListener('click', () => this.end('ended'));
    $('[data-agent-return]').addEventListener('click', () => this.end('returned'));
  }

  typing() {
    const open = this.open;
    if (open?.shownState !== 'assigned') return;
    const now = Date.now();
    if (open.typingAt && now - open.typingAt < TYPING_INTERVAL_MS) return;
    open.typingAt = now;
    this.api.typing(open.id).catch(() => {}); // best effort: a lost cue loses nothing
  }

  async sendReply() {
    const open = this.open;
    const input = $('[data-agent-reply-input]');
    const text = input.value;
    if (!open || !text.trim()) return;
    if (open.sending) {
      // The stream can confirm the previous reply before its POST answers; an Enter pressed
      // in between is kept and sent right after, in order, not dropped
      // (test_the_console_and_the_widget_across_two_servers_on_redis).
      open.sendAgain = true;
      return;
    }
    open.sending = true;
    // One request id per reply, reused if the agent presses Send again after a failure.
    if (!open.replyRequest || open.replyRequest.text !== text) {
      open.replyRequest = { id: newRequestId(), text };
    }
    try {
      const result = await this.api.reply(open.id, open.replyRequest.id, text);
      open.replyRequest = null;
      if (input.value === text) input.value = '';
      if (this.open === open && !open.messages.has(result.message_id)) {
        const item = this.addMessage(
          {
            message_id: result.message_id,
            role: 'agent',
            text,
            agent: this.config.agent?.display_name,
          },
          { verify: false },
        );
        // Confirmed by its agent.message event (with the server's SHA-256) on the stream.
        if (item) item.dataset.pending = 'true';
        if (item && result.sha256) {
          delete item.dataset.pending;
          this.verify(item, text, result.sha256);
        }
      }
    } catch (error) {
      open.sendAgain = false; // after a failure the agent decides, seeing the error
      this.fail(error);
    } finally {
      open.sending = false;
    }
    if (open.sendAgain) {
      open.sendAgain = false;
      if (this.open === open) this.sendReply();
    }
  }

  async end(reason) {
    const open = this.open;
    if (!open) return;
    try {
      await this.api.end(open.id, reason);
    } catch (error) {
      this.fail(error);
      return;
    }
    // The conversation stays on screen, read-only, and its stream followed: the visitor's
    // answer to "How was your conversation?" comes to the agent who ended it there
    // (docs/agents.md, "Satisfaction"). Opening another conversation closes it.
    if (this.open === open) {
      open.state = 'ended';
      open.reason = reason;
      open.shownState = 'ended';
      this.showState();
    }
    this.status.say(reason === 'returned' ? this.s.returned : this.s.ended);
    $('#queue-heading').focus();
    this.poll();
  }

  // -- the inbox ---------------------------------------------------------------------------

  noteInbox(unreplied) {
    if (typeof unreplied !== 'number') return;
    const before = this.inboxUnreplied;
    this.inboxUnreplied = unreplied;
    if (before === null || unreplied <= before) return;
    const text = plural(this.s.announceInbox, unreplied - before, this.lang);
    this.status.say(text);
    this.notifier.notify(text);
    this.loadInbox();
  }

  // The newest page again (as many as are shown, up to a page's most), merged into the list;
  // older pages come with the "Show older messages" button (docs/agents.md, "The inbox").
  async loadInbox() {
    const limit = Math.min(INBOX_PAGE_MAX, Math.max(INBOX_PAGE, this.inboxItems.size));
    let body;
    try {
      body = await this.api.inbox({ limit });
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) this.sessionEnded();
      return; // the next change of the unreplied count loads it again
    }
    const messages = body.messages || [];
    const everything = !body.next_cursor;
    if (everything) {
      const ids = new Set(messages.map((message) => message.left_message_id));
      this.removeMissing(this.inboxItems, ids, '#inbox-heading');
    }
    // Older pages the agent opened stay below; the cursor moves only while none is open.
    if (everything || this.inboxItems.size <= messages.length)
      this.inboxCursor = body.next_cursor || null;
    this.showInbox(messages, 0);
    this.noteExpired(body.expired);
  }

  async loadOlderInbox() {
    if (!this.inboxCursor) return;
    let body;
    try {
      body = await this.api.inbox({ limit: INBOX_PAGE, cursor: this.inboxCursor });
    } catch (error) {
      this.fail(error);
      return;
    }
    this.inboxCursor = body.next_cursor || null;
    this.showInbox(body.messages || [], this.inboxList.children.length);
    this.noteExpired(body.expired);
    // The button hides after the oldest page: focus goes to the section, not the page's top.
    if (!this.inboxCursor) $('#inbox-heading').focus();
  }

  // Each message in its place from `start`, newest first; a node is moved only when out of
  // place, since moving the focused reply box would drop its focus.
  showInbox(messages, start) {
    messages.forEach((message, offset) => {
      const index = start + offset;
      let item = this.inboxItems.get(message.left_message_id);
      if (!item) {
        item = this.inboxItem(message);
        this.inboxItems.set(message.left_message_id, item);
      }
      this.markReplied(item, message.replied);
      if (this.inboxList.children[index] !== item) {
        this.inboxList.insertBefore(item, this.inboxList.children[index] || null);
      }
    });
    $('[data-agent-inbox-empty]').hidden = this.inboxItems.size > 0;
    $('[data-agent-inbox-older]').hidden = !this.inboxCursor;
  }

  // How many left messages the inbox let go (age or HANDOFF_INBOX_MAX): said, never silent.
  noteExpired(expired) {
    const note = $('[data-agent-inbox-expired]');
    note.hidden = !(expired > 0);
    if (expired > 0) note.textContent = plural(this.s.inboxExpired, expired, this.lang);
  }

  inboxItem(message) {
    const item = element('li', 'inbox__item');
    item.dataset.leftMessageId = message.left_message_id;
    const meta = element('p', 'inbox__from');
    if (message.email) setIsolated(meta, this.s.inboxFrom, { email: message.email });
    else meta.textContent = this.s.inboxNoEmail;
    const when = Date.parse(message.created_at);
    if (Number.isFinite(when)) {
      const time = element('time', 'inbox__when', new Date(when).toLocaleString(this.lang));
      time.dateTime = message.created_at;
      meta.append(' · ', time);
    }
    const status = element('p', 'inbox__replied', this.s.inboxReplied);
    status.hidden = true;
    const reply = element('button', 'button button--secondary', this.s.inboxReply);
    reply.type = 'button';
    reply.setAttribute('aria-expanded', 'false');
    reply.setAttribute(
      'aria-label',
      format(this.s.inboxReplyLabel, { from: message.email || this.s.inboxAnonymous }),
    );
    const form = this.inboxForm(message, item, reply);
    reply.setAttribute('aria-controls', form.id);
    reply.addEventListener('click', () => {
      const opening = form.hidden;
      form.hidden = !opening;
      reply.setAttribute('aria-expanded', String(opening));
      if (opening) $('textarea', form).focus();
    });
    const text = element('p', 'inbox__text', message.text);
    text.dir = 'auto'; // the visitor's text, in its own direction (A92)
    item.append(meta, text, status, reply, form);
    return item;
  }

  inboxForm(message, item, replyButton) {
    const form = element('form', 'reply');
    form.id = `inbox-reply-${message.left_message_id}`;
    form.hidden = true;
    const inputId = `${form.id}-text`;
    const label = element('label', 'field__label', this.s.inboxReplyBox);
    label.htmlFor = inputId;
    const input = element('textarea', 'field__input reply__input');
    input.id = inputId;
    input.rows = 3;
    const buttons = element('div', 'reply__buttons');
    const send = element('button', 'button', this.s.inboxSend);
    send.type = 'submit';
    const cancel = element('button', 'button button--secondary', this.s.inboxCancel);
    cancel.type = 'button';
    buttons.append(send, cancel);
    form.append(label, input, buttons);
    const close = () => {
      form.hidden = true;
      replyButton.setAttribute('aria-expanded', 'false');
      replyButton.focus();
    };
    cancel.addEventListener('click', close);
    form.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') close();
    });
    let request = null;
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const text = input.value;
      if (!text.trim() || form.dataset.sending === 'true') return;
      if (!request || request.text !== text) request = { id: newRequestId(), text };
      form.dataset.sending = 'true';
      try {
        await this.api.replyToLeft(message.left_message_id, request.id, text);
        request = null;
        input.value = '';
        this.markReplied(item, true);
        this.status.say(this.s.inboxSent);
        close();
      } catch (error) {
        this.fail(error);
      } finally {
        delete form.dataset.sending;
      }
    });
    return form;
  }

  markReplied(item, replied) {
    $('.inbox__replied', item).hidden = !replied;
    item.dataset.replied = String(Boolean(replied));
  }
}

async function loadStrings(config) {
  if (config.strings && Object.keys(config.strings).length) return config.strings;
  const lang = /^[a-z]{2,3}$/.test(config.lang || '') ? config.lang : 'en';
  return consoleStrings(lang);
}

async function boot() {
  const config = JSON.parse($('#agent-config').textContent);
  const strings = await loadStrings(config);
  new AgentConsole(config, strings).start();
}

boot();
