// The chat panel's UI: transcript, composer, and one AnswerRun per answer.
//
// Layers: sse.js reads bytes into events; client.js talks HTTP; model.js
// applies events idempotently; markdown.js renders; announcer.js speaks.
// This module wires them to the DOM and owns focus and state attributes.

import { Announcer } from './announcer.js';
import { ApiError, ChatClient, newRequestId } from './client.js';
import { format, markdownSummaries, plural } from './i18n.js';
import { createMarkdownView } from './markdown.js';
import { AnswerModel } from './model.js';

// Action cards (actions.js) load only when an answer offers an action or a
// restored conversation may have some: not part of the first open.
const actionsModule = () => import('./actions.js');

export class ChatWidgetError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ChatWidgetError';
  }
}

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    if (signal)
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text != null) node.textContent = text;
  return node;
}

function required(root, selector) {
  const node = root.querySelector(selector);
  if (!node) throw new ChatWidgetError(`chat panel markup is missing ${selector}`);
  return node;
}

export class ChatPanel {
  constructor(root, config) {
    if (!(root instanceof HTMLElement))
      throw new ChatWidgetError('ChatPanel needs its root element');
    this.root = root;
    this.config = config;
    this.t = config.strings;
    this.transcript = required(root, '[data-chat-transcript]');
    this.scroller = required(root, '[data-chat-scroller]');
    this.empty = required(root, '[data-chat-empty]');
    this.form = required(root, '[data-chat-composer]');
    this.input = required(root, '[data-chat-input]');
    this.sendButton = required(root, '[data-chat-send]');
    this.stopButton = required(root, '[data-chat-stop]');
    this.alert = required(root, '[data-chat-alert]');
    this.client = new ChatClient({ apiBase: config.apiBase, faults: config.faults || '' });
    this.announcer = new Announcer(required(root, '[data-chat-announcer]'), {
      lang: config.lang,
      minIntervalMs: config.announceIntervalMs,
      onAnnounce: (detail) => this.emit('announce', detail),
    });
    this.current = null;
    this.bind();
  }

  // Documented DOM events (docs/events.md), namespaced `chatwidget:`, bubbling
  // from the panel root and cancelable: a listener's preventDefault() on
  // `chatwidget:announce` keeps that text out of the live region. Returns
  // false when cancelled.
  emit(name, detail) {
    return this.root.dispatchEvent(
      new CustomEvent(`chatwidget:${name}`, { bubbles: true, cancelable: true, detail }),
    );
  }

  bind() {
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.submit();
    });
    this.input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.submit();
      }
    });
    this.stopButton.addEventListener('click', () => this.stop());
    document.addEventListener('keydown', (event) => {
      if (event.key === 'Escape' && !this.config.standalone) this.requestClose();
    });
    // Every focus move inside the panel, for QA logs and tests (focus must
    // stay in the composer while an answer streams).
    document.addEventListener('focusin', (event) => {
      const target = event.target;
      this.emit('focus', {
        target: target.id || target.getAttribute('data-chat-role') || target.tagName.toLowerCase(),
      });
    });
    const closeButton = this.root.querySelector('[data-chat-close]');
    if (closeButton) closeButton.addEventListener('click', () => this.requestClose());
    window.addEventListener('message', (event) => {
      if (event.source !== window.parent || !this.originAllowed(event.origin)) return;
      if (event.data && event.data.type === 'chatwidget:opened') this.input.focus();
    });
    // Page lifecycle: come back → resume at once rather than waiting out a backoff.
    const wake = () => this.current && this.current.wake();
    window.addEventListener('online', wake);
    window.addEventListener('pageshow', wake);
    document.addEventListener('resume', wake);
    document.addEventListener(
      'visibilitychange',
      () => document.visibilityState === 'visible' && wake(),
    );
    window.addEventListener('offline', () => this.current && this.current.goOffline());
  }

  originAllowed(origin) {
    const allowed = this.config.hostOrigins || [];
    return allowed.includes('*') || allowed.includes(origin);
  }

  requestClose() {
    if (window.parent === window) return;
    const target = this.config.hostOrigin || '*';
    window.parent.postMessage({ type: 'chatwidget:close' }, target);
  }

  // -- conversation ---------------------------------------------------------

  storageKey() {
    return `chatwidget:${this.config.apiBase}`;
  }

  async restore() {
    // The server remembers this browser's conversation in a partitioned
    // cookie (works where third-party storage is blocked); localStorage is
    // the fallback where it is allowed.
    let saved = this.config.conversation;
    if (!saved) {
      try {
        saved = JSON.parse(localStorage.getItem(this.storageKey()) || 'null');
      } catch {
        saved = null; // storage blocked or corrupt: start fresh
      }
    }
    if (!saved || !saved.conversation_id) return;
    this.client.conversationId = saved.conversation_id;
    this.client.token = saved.token;
    let messages;
    try {
      messages = await this.client.history();
    } catch {
      this.forget();
      return;
    }
    for (const message of messages) {
      if (message.role === 'user') {
        this.addUserTurn(message.text);
      } else if (message.state === 'completed') {
        const turn = this.addAssistantTurn();
        turn.item.dataset.messageId = message.message_id; // its actions are restored by id
        const view = createMarkdownView(turn.body, this.viewOptions());
        view.update(message.text);
        view.finish();
        this.setTurnState(turn, 'completed');
      } else {
        // Still being written when the page was left: resume it quietly
        // (what was already there is not re-announced).
        this.startRun({ messageId: message.message_id, restored: true });
      }
    }
    if (messages.some((m) => m.role === 'assistant' && m.state === 'completed')) {
      await actionsModule().then(
        (m) => m.restoreActions(this),
        () => {},
      );
    }
  }

  forget() {
    this.client.conversationId = '';
    this.client.token = '';
    try {
      localStorage.removeItem(this.storageKey());
    } catch {
      /* storage unavailable: nothing to forget */
    }
  }

  async ensureConversation() {
    if (this.client.conversationId) return;
    const body = await this.client.createConversation();
    try {
      localStorage.setItem(this.storageKey(), JSON.stringify(body));
    } catch {
      /* storage unavailable: the conversation lasts as long as the page */
    }
  }

  viewOptions() {
    const t = this.t;
    return {
      headingOffset: 1, // the panel's title is the h1: answer headings start at h2
      strings: markdownSummaries(t, this.config.lang),
    };
  }

  // -- turns -----------------------------------------------------------------

  addUserTurn(text) {
    const item = el('li', 'turn turn--user');
    item.append(el('p', 'turn__who', this.t.you), el('p', 'turn__body turn__body--plain', text));
    this.transcript.append(item);
    this.empty.hidden = true;
    return item;
  }

  addAssistantTurn() {
    const item = el('li', 'turn turn--assistant');
    const body = el('div', 'turn__body md');
    const status = el('p', 'turn__status');
    const actions = el('div', 'turn__actions');
    item.append(el('p', 'turn__who', this.t.assistant), body, status, actions);
    this.transcript.append(item);
    this.empty.hidden = true;
    return { item, body, status, actions };
  }

  // Follow a growing answer only if the reader is already at the bottom;
  // someone scrolled up to re-read is left where they are.
  atBottom() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < 48;
  }

  scrollToEnd() {
    this.scroller.scrollTop = this.scroller.scrollHeight;
  }

  setTurnState(turn, state, statusText = '') {
    turn.item.dataset.state = state;
    // aria-busy while the answer may still change; removed at once at any end.
    if (state === 'streaming' || state === 'reconnecting')
      turn.item.setAttribute('aria-busy', 'true');
    else turn.item.removeAttribute('aria-busy');
    turn.status.textContent = statusText;
    turn.status.hidden = !statusText;
    this.emit('state', { state, messageId: turn.item.dataset.messageId || '' });
  }

  setStreaming(streaming) {
    const focusWasOnButton =
      document.activeElement === this.sendButton || document.activeElement === this.stopButton;
    this.sendButton.hidden = streaming;
    this.stopButton.hidden = !streaming;
    if (focusWasOnButton) this.input.focus(); // never leave focus on a hidden button
  }

  // -- sending ---------------------------------------------------------------

  async submit() {
    const text = this.input.value;
    if (!text.trim()) return;
    if (this.current && !this.current.done) {
      this.showAlert(this.t.busy);
      return;
    }
    this.input.value = '';
    this.addUserTurn(text);
    this.scrollToEnd();
    this.startRun({ request: { requestId: newRequestId(), text } });
  }

  startRun(options) {
    this.alert.textContent = '';
    const run = new AnswerRun(this, options);
    this.current = run;
    this.setStreaming(true);
    run.start().finally(() => {
      if (this.current === run) this.setStreaming(false);
    });
    return run;
  }

  stop() {
    if (this.current) this.current.cancel();
    this.input.focus();
  }

  showAlert(text) {
    // The alert region is assertive: errors only, each said once.
    if (this.emit('announce', { politeness: 'assertive', text })) this.alert.textContent = text;
  }
}

class AnswerRun {
  constructor(panel, { request = null, messageId = '', restored = false }) {
    this.panel = panel;
    this.request = request;
    this.model = new AnswerModel(messageId);
    this.restored = restored;
    this.turn = panel.addAssistantTurn();
    this.view = createMarkdownView(this.turn.body, panel.viewOptions());
    this.done = false;
    this.cancelRequested = false;
    this.wantSnapshot = false;
    this.outage = false;
    this.wakeController = null;
    this.abortController = null;
    this.pendingText = '';
    this.renderScheduled = false;
    this.announceFromHere = false;
  }

  get t() {
    return this.panel.t;
  }

  async start() {
    const panel = this.panel;
    panel.setTurnState(this.turn, 'streaming', this.t.stateStreaming);
    if (!this.restored) panel.announcer.start(this.t.generating);
    if (this.request) {
      try {
        await panel.ensureConversation();
      } catch (error) {
        return this.failLocally(format(this.t.sendFailed, { reason: error.message }));
      }
    }
    try {
      await this.loop();
    } catch (error) {
      // A bug of ours must still end the answer visibly, never leave it busy.
      console.error('chat widget:', error);
      if (!this.done) this.fail({ code: 'internal' });
    }
  }

  // Read, and resume after every drop, until a terminal event or giving up.
  async loop() {
    const config = this.panel.config;
    let backoff = 0;
    let retryAfterMs = 0;
    let lastProgress = Date.now();
    while (!this.model.terminal) {
      if (!navigator.onLine) {
        // Offline: wait for 'online' (or another wake-up), but no longer
        // than the limit after which the answer is marked incomplete.
        this.setConnection('offline');
        await this.waitForWake(lastProgress + config.incompleteAfterMs - Date.now());
        if (!navigator.onLine) return this.giveUp();
      }
      let progressed = false;
      const controller = new AbortController();
      this.abortController = controller;
      const stall = { timer: 0 };
      const touch = () => {
        clearTimeout(stall.timer);
        stall.timer = setTimeout(() => controller.abort(), config.stallTimeoutMs);
      };
      touch();
      try {
        const known = this.model.messageId;
        const result = await this.panel.client.readOnce({
          send: known ? null : this.request,
          messageId: known,
          lastEventId: known ? this.model.lastEventId : '',
          snapshot: this.consumeSnapshotWish(),
          signal: controller.signal,
          onBytes: touch,
          onEvent: (type, data) => {
            if (this.onEvent(type, data, controller)) progressed = true;
          },
        });
        if (result.retry != null) this.retryMs = result.retry;
      } catch (error) {
        if (error instanceof ApiError) {
          if ((error.status === 429 || error.status === 503) && !this.model.messageId) {
            return this.failLocally(this.refusal(error));
          }
          // The answer is gone from the server (a store restarted without
          // persistence): say so, never show a raw 404.
          if (error.status === 404 && this.model.messageId) return this.fail({ code: 'lost' });
          if (error.status < 500 && error.status !== 429) return this.failLocally(error.message);
          // A 503 or 429 on resume says when to come back: not sooner.
          if (error.retryAfter) retryAfterMs = error.retryAfter * 1000;
        }
        // Network errors, aborts and 5xx: resume below.
      } finally {
        clearTimeout(stall.timer);
      }
      if (this.model.terminal) break;
      if (progressed) {
        lastProgress = Date.now();
        backoff = 0;
      }
      if (this.wantSnapshot) continue; // a gap: fetch the snapshot now
      if (Date.now() - lastProgress > config.incompleteAfterMs) return this.giveUp();
      this.setConnection('reconnecting');
      const base = this.retryMs != null ? this.retryMs : config.retryMs;
      backoff = backoff ? Math.min(backoff * 2, config.maxBackoffMs) : base;
      await this.waitForWake(Math.max(backoff * (0.8 + Math.random() * 0.4), retryAfterMs));
      retryAfterMs = 0;
    }
    await this.finish();
  }

  // What to tell the user when the server refuses to start an answer.
  refusal(error) {
    if (error.code === 'too_many_running') return this.t.busy;
    if (error.code === 'rate_limited')
      return format(this.t.rateLimited, {
        seconds: plural(this.t.seconds, error.retryAfter || 60, this.panel.config.lang),
      });
    if (error.code === 'store_unavailable' || error.code === 'server_busy')
      return this.t.errors.unavailable;
    return error.message;
  }

  consumeSnapshotWish() {
    const wish = this.wantSnapshot;
    this.wantSnapshot = false;
    return wish;
  }

  onEvent(type, data, controller) {
    const before = this.model.lastSeq;
    const outcome = this.model.apply(type, data);
    if (outcome === 'gap') {
      // A missing sequence number: do not guess, ask for a snapshot.
      this.wantSnapshot = true;
      controller.abort();
      return false;
    }
    if (outcome !== 'applied') {
      this.panel.emit('event', { type, seq: data.seq, outcome });
      return false;
    }
    this.panel.emit('event', { type, seq: data.seq, outcome });
    this.turn.item.dataset.messageId = this.model.messageId;
    if (this.outage) this.setConnection('online');
    if (this.cancelRequested && type === 'message.started') this.sendCancel();
    if (type === 'text.delta') {
      this.pendingText += data.text;
      this.scheduleRender();
    } else if (type === 'message.snapshot') {
      this.render(true);
    }
    return this.model.lastSeq > before;
  }

  // Render at most once per frame (or per 100 ms when hidden, where frames
  // do not run): 5,000 deltas must not mean 5,000 layouts.
  scheduleRender() {
    if (this.renderScheduled) return;
    this.renderScheduled = true;
    const run = () => this.render(false);
    if (document.visibilityState === 'visible') requestAnimationFrame(run);
    else setTimeout(run, 100);
  }

  render(snapshot) {
    this.renderScheduled = false;
    const follow = this.panel.atBottom();
    if (snapshot) {
      // The model's whole text supersedes any deltas not yet drawn.
      this.pendingText = '';
      this.view.update(this.model.text);
    } else if (this.pendingText) {
      this.view.append(this.pendingText);
      this.pendingText = '';
    }
    if (follow) this.panel.scrollToEnd();
    if (this.done) return;
    if (this.restored && !this.announceFromHere) {
      this.announceFromHere = true;
      this.panel.announcer.skipTo(this.view);
    } else {
      this.panel.announcer.update(this.view);
    }
  }

  setConnection(state) {
    if (this.done) return;
    if (state === 'online') {
      this.outage = false;
      this.panel.setTurnState(this.turn, 'streaming', this.t.stateStreaming);
      return;
    }
    const text = state === 'offline' ? this.t.offline : this.t.reconnecting;
    if (!this.outage) this.panel.announcer.cue(text); // once per outage
    this.outage = true;
    this.panel.setTurnState(this.turn, 'reconnecting', text);
  }

  // The browser says the network is gone: a read in flight cannot deliver
  // (in real life it would stall until the stall timer), so stop it and
  // wait for 'online', counting toward the incomplete limit.
  goOffline() {
    if (this.done) return;
    this.setConnection('offline');
    if (this.abortController) this.abortController.abort();
  }

  waitForWake(ms) {
    this.wakeController = new AbortController();
    return sleep(Math.max(0, ms), this.wakeController.signal);
  }

  wake() {
    if (this.wakeController) this.wakeController.abort();
  }

  async cancel() {
    if (this.done) return;
    this.cancelRequested = true;
    if (this.model.messageId) await this.sendCancel();
  }

  async sendCancel() {
    try {
      await this.panel.client.cancel(this.model.messageId);
    } catch {
      /* the stream will still say how it ended; a lost cancel is retried by the user */
    }
    this.wake();
  }

  async finish() {
    const model = this.model;
    const t = this.t;
    this.reportRepairs();
    this.render(true); // the whole text, exactly as verified below
    this.view.finish();
    this.done = true; // from here on, renders no longer feed the announcer
    if (model.state === 'completed') {
      if (await model.verify()) {
        this.panel.setTurnState(this.turn, 'completed');
        this.panel.announcer.finish(this.view, t.complete);
        const offered = model.actionable; // only now: completed and verified
        if (offered.length)
          (await actionsModule()).offerActions(this.panel, this.turn, model.messageId, offered);
      } else {
        this.fail({ code: 'integrity', message: t.errors.integrity, retryable: true });
      }
    } else if (model.state === 'cancelled') {
      this.panel.setTurnState(this.turn, 'cancelled', t.stateCancelled);
      this.panel.announcer.interrupt(t.cancelled);
    } else {
      this.fail(model.error || { code: 'internal', retryable: true });
    }
  }

  // Duplicates ignored and gaps repaired are invisible to the user by design;
  // the server's /metrics counts them so operators see the network's health.
  reportRepairs() {
    const { duplicates, dropped, messageId } = this.model;
    if (!messageId || (!duplicates && !dropped)) return;
    this.panel.client.report(messageId, { duplicates, dropped }).catch(() => {});
  }

  fail(error) {
    const t = this.t;
    const message = t.errors[error.code] || error.message || t.errors.internal;
    // What arrived before a failure stays visible, marked incomplete.
    const partial = this.model.text ? `${t.stateIncomplete}. ` : '';
    this.done = true;
    this.turn.item.classList.add('turn--failed');
    this.panel.setTurnState(this.turn, 'failed', `${partial}${t.stateFailed}: ${message}`);
    this.panel.announcer.interrupt(null);
    this.panel.showAlert(message);
    this.offerRetry(false);
  }

  failLocally(message) {
    this.fail({ code: '', message });
  }

  giveUp() {
    this.done = true;
    this.panel.setTurnState(this.turn, 'incomplete', this.t.stateIncomplete);
    this.panel.announcer.interrupt(this.t.incomplete);
    this.offerRetry(true);
  }

  // Retry: "continue" resumes the same run (same request, from the last
  // event); "ask again" regenerates with a new request id.
  offerRetry(canContinue) {
    const actions = this.turn.actions;
    actions.textContent = '';
    if (canContinue) {
      const resume = el('button', 'button button--secondary', this.t.retryContinue);
      resume.type = 'button';
      resume.addEventListener('click', () => {
        actions.textContent = '';
        this.panel.input.focus();
        this.done = false;
        this.outage = false;
        this.panel.current = this;
        this.panel.setStreaming(true);
        this.panel.setTurnState(this.turn, 'streaming', this.t.stateStreaming);
        this.loop().finally(() => this.panel.setStreaming(false));
      });
      actions.append(resume);
    }
    const text = this.request && this.request.text;
    if (text) {
      const again = el(
        'button',
        'button button--secondary',
        canContinue ? this.t.regenerate : this.t.retry,
      );
      again.type = 'button';
      again.addEventListener('click', () => {
        actions.textContent = '';
        this.panel.input.focus();
        this.panel.startRun({ request: { requestId: newRequestId(), text } });
      });
      actions.append(again);
    }
  }
}

function boot() {
  const root = document.querySelector('[data-chat-panel]');
  const configNode = document.getElementById('chat-config');
  if (!root || !configNode) return;
  const config = JSON.parse(configNode.textContent);
  const panel = new ChatPanel(root, config);
  window.chatPanel = panel; // for the page's own tests and the QA tools
  panel.restore().finally(() => {
    root.dataset.ready = 'true';
    panel.emit('ready', {});
  });
}

boot();
