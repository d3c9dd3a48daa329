// The chat panel's UI: transcript, composer, and one AnswerRun per answer.
//
// Layers: sse.js reads bytes into events; follow.js follows a stream (the
// stall timer, the backoff, the resume); client.js talks HTTP; model.js
// applies events idempotently; markdown.js renders; announcer.js speaks.
// This module wires them to the DOM and owns focus and state attributes.
// It only defines classes; panel.js boots them.

import { Announcer } from './announcer.js';
import { ApiError, ChatClient, errorFrom, newRequestId } from './client.js';
import { element, sleep } from './dom.js';
import { follow } from './follow.js';
import { format, markdownSummaries, plural } from './i18n.js';
import { createMarkdownView } from './markdown.js';
import { AnswerModel } from './model.js';
import { ANSWER_EVENT, ANSWER_FAILURE, ERROR, MESSAGE_STATE } from './protocol.js';

// Action cards (actions.js) load only when an answer offers an action or a
// restored conversation may have some: not part of the first open
// (tests/test_budgets.py).
const loadActions = () => import('./actions.js');
// An answer's sources (sources.js): loaded only when a completed answer lists some.
const loadSources = () => import('./sources.js');
// Attachments (attachments.js): loaded on the first press of Attach, drag of files over the
// panel or paste of a file; a user turn with files loads it to show them.
const attachments = () => import('./attachments.js');
// The host page's API (host-api.js), once a page used it: one panel per document.
/** @type {Promise<(message: { name?: unknown, value?: unknown }) => void> | null} */
let hostApi = null;

export class ChatWidgetError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ChatWidgetError';
  }
}

/**
 * @param {ParentNode} root
 * @param {string} selector
 * @returns {HTMLElement}
 */
function required(root, selector) {
  const node = /** @type {HTMLElement | null} */ (root.querySelector(selector));
  if (!node) throw new ChatWidgetError(`chat panel markup is missing ${selector}`);
  return node;
}

const FOLLOW_THRESHOLD_PX = 48;
// Drawing is time-sliced (docs/performance.md, "Widget"): an answer that arrives at once (every
// delta before the first frame, or one snapshot) is drawn over several frames, never in one long
// task (over 50 ms, https://w3c.github.io/longtasks/). A frame draws until FRAME_BUDGET_MS of
// markdown work or FRAME_CHARS characters: the style and layout of what it drew take several
// times as long again (Chromium traces of bench/widget.py: layout is linear in the new nodes).
const FRAME_BUDGET_MS = 3;
const FRAME_CHARS = 8192;
// A slice ends at a blank line near this length (else at a line's end): the blocks before
// it are closed, so each is drawn and announced once, as in a single pass.
const SLICE_CHARS = 2048;

/** @typedef {import('./client.js').Attachment} Attachment */
/** @typedef {import('./client.js').AttachmentRef} AttachmentRef */
/** @typedef {import('./client.js').HistoryMessage} HistoryMessage */
/** @typedef {import('./client.js').SendRequest} SendRequest */
/** @typedef {import('./model.js').AnswerError} AnswerError */

/** @typedef {import('./host.js').PanelConfig} PanelConfig */
/** @typedef {import('./host.js').HandoffResume} HandoffResume */
/** @typedef {import('./host.js').PanelHost} PanelHost */
/** @typedef {import('./host.js').AssistantTurn} AssistantTurn */
/** @typedef {import('./host.js').AttachmentsHook} AttachmentsHook */
/** @typedef {import('./host.js').HandoffHook} HandoffHook */
/** @typedef {import('./host.js').HoldHook} HoldHook */
/** @typedef {import('./host.js').ConsentHook} ConsentHook */
/** @typedef {import('./host.js').IdentityHooks} IdentityHooks */
/**
 * markdown.js's `code` option: a block's line renderer (null until code-blocks.js is in, or for
 * a language it has no rules for), and the hook for a block at its end.
 * @typedef {{ lines: (language: string) => ((line: string) => Node) | null,
 *   closed: (pre: HTMLPreElement, language: string) => unknown }} CodeOptions
 */

/**
 * The panel: the DOM, the client, the announcer and the current answer. The lazily loaded parts
 * (outbox.js, tab-sync.js, scroll-follow.js, handoff.js, attachments.js, answer-tools.js,
 * code-blocks.js, conversation-tools.js, actions.js, refusals.js) never get it: they get its
 * `host`, the interface host.js lists (makeHost), and hang their hooks on it through
 * `host.provide`.
 */
export class ChatPanel {
  /**
   * @param {HTMLElement} root
   * @param {PanelConfig} config
   */
  constructor(root, config) {
    if (!(root instanceof HTMLElement))
      throw new ChatWidgetError('ChatPanel needs its root element');
    this.root = root;
    this.config = config;
    this.strings = config.strings;
    this.transcript = /** @type {HTMLOListElement} */ (required(root, '[data-chat-transcript]'));
    this.scroller = required(root, '[data-chat-scroller]');
    this.empty = required(root, '[data-chat-empty]');
    this.form = /** @type {HTMLFormElement} */ (required(root, '[data-chat-composer]'));
    this.input = /** @type {HTMLTextAreaElement} */ (required(root, '[data-chat-input]'));
    this.sendButton = /** @type {HTMLButtonElement} */ (required(root, '[data-chat-send]'));
    this.stopButton = /** @type {HTMLButtonElement} */ (required(root, '[data-chat-stop]'));
    this.alert = required(root, '[data-chat-alert]');
    this.client = new ChatClient({
      apiBase: config.apiBase,
      faults: config.faults || '',
    });
    this.announcer = new Announcer(required(root, '[data-chat-announcer]'), {
      lang: config.lang,
      minIntervalMs: config.announceIntervalMs,
      mode: config.announceMode,
      onAnnounce: (detail) => this.emit('announce', detail),
    });
    /** @type {AnswerRun | null} the latest answer */
    this.current = null;
    /** @type {CodeOptions | null} markdown.js's `code` option, made once (codeOptions) */
    this.code = null;
    /** @type {Promise<CodeOptions | null> | null} code-blocks.js's hooks, once imported */
    this.codeBlocks = null;
    /** @type {((formulas: NodeListOf<HTMLElement>) => void) | null} math.js's, once imported */
    this.drawMath = null;
    /** @type {Promise<unknown> | null} math.js, importing */
    this.mathModule = null;
    /** @type {HTMLElement[]} formulas shown as their source until math.js comes */
    this.mathWaiting = [];
    /** @type {AttachmentsHook | null} */
    this.attachments = null;
    /** @type {HandoffHook | null} */
    this.handoff = null;
    /** @type {HoldHook | null} */
    this.hold = null;
    /** @type {ConsentHook | null} consent.js's, with CONSENT_TEXT */
    this.consent = null;
    /** @type {IdentityHooks['identityRefused'] | null} */
    this.identityRefused = null;
    /** @type {IdentityHooks['checkIdentity'] | null} */
    this.checkIdentity = null;
    /** @type {Promise<unknown> | null} identity.js, importing or applying the latest token */
    this.identityPart = null;
    /** @type {PanelHost} all that the lazily loaded parts see of the panel */
    this.host = this.makeHost();
    // Once ready, while online: offline sends, other tabs (docs/design.md), following the end.
    // A hand-off only when there is one to resume (web.py puts it in the config): the
    // hand-off's module stays out of the first open otherwise (tests/test_budgets.py).
    root.addEventListener('chatwidget:ready', () => {
      const parts = ['outbox', 'tab-sync', 'scroll-follow'];
      if (/** @type {HandoffResume} */ (config.handoff)?.conversation_id) parts.push('handoff');
      if (config.consent) parts.push('consent');
      for (const name of parts) import(`./${name}.js`).then((m) => m.init(this.host));
    });
    // data-starters / data-greeting the server ignored
    for (const warning of config.warnings || []) console.warn('chat widget:', warning);
    this.bind();
  }

  // The one door of the lazily loaded parts into the panel: each member's why is in host.js.
  /** @returns {PanelHost} */
  makeHost() {
    const panel = this;
    return {
      config: this.config,
      strings: this.strings,
      announcer: this.announcer,
      client: this.client,
      root: this.root,
      transcript: this.transcript,
      scroller: this.scroller,
      form: this.form,
      input: this.input,
      storageKey: this.storageKey(),
      get following() {
        return panel.following;
      },
      set following(following) {
        panel.following = following;
      },
      currentRun: () => this.current,
      startRun: (options) => this.startRun(options),
      addUserTurn: (text, files) => this.addUserTurn(text, files),
      whoSaid: (label, heading) => this.who(label, heading),
      addToTranscript: (item) => this.addToTranscript(item),
      atBottom: () => this.atBottom(),
      scrollToEnd: () => this.scrollToEnd(),
      viewOptions: () => this.viewOptions(),
      showAlert: (text) => this.showAlert(text),
      emit: (name, detail) => this.emit(name, detail),
      on: (name, listener) => {
        const type = `chatwidget:${name}`;
        this.root.addEventListener(type, listener);
        return () => this.root.removeEventListener(type, listener);
      },
      ensureConversation: () => this.ensureConversation(),
      consentBody: () => this.consent?.body(),
      notifyHost: () => this.notifyHost(),
      remember: (conversation) => this.remember(conversation),
      forget: () => this.forget(),
      clearTranscript: () => this.clearTranscript(),
      redraw: () => this.redraw(),
      provide: (hooks) => Object.assign(this, hooks),
      filesSent: (refs) => this.attachments?.sent(refs),
      clearFiles: () => this.attachments?.clear(),
    };
  }

  // Documented DOM events (docs/events.md), namespaced `chatwidget:`, bubbling
  // from the panel root and cancelable: a listener's preventDefault() on
  // `chatwidget:announce` keeps that text out of the live region. Returns
  // false when cancelled.
  /**
   * @template {keyof ChatWidgetEventDetails} K
   * @param {K} name
   * @param {ChatWidgetEventDetails[K]} detail
   * @returns {boolean}
   */
  emit(name, detail) {
    return this.root.dispatchEvent(
      new CustomEvent(`chatwidget:${name}`, {
        bubbles: true,
        cancelable: true,
        detail,
      }),
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
    // No conversation until the first message is sent: opening the panel or typing in it
    // stores nothing, on the server or in the browser (docs/security.md, "Nothing stored before
    // the first message"; tests/e2e/test_no_storage_before_send.py).
    this.stopButton.addEventListener('click', () => this.stop());
    // One after another, in the order of the events (a drag's hint, then its drop), whatever
    // order the module's loads resolve in; a failed load (offline) leaves the next one free.
    let attaching = Promise.resolve();
    /** @type {(how: 'choose' | 'drag' | 'drop' | 'paste', files?: File[]) => void} */
    const attach = (how, files) => {
      // Files go with the first message: the agreement first, as for a send (consent.js).
      if (how !== 'drag' && this.consent?.hold()) return;
      attaching = attaching
        .catch(() => {})
        .then(attachments)
        .then((module) => module.use(this.host, how, files));
    };
    this.root
      .querySelector('[data-chat-attach]')
      ?.addEventListener('click', () => attach('choose'));
    this.root.addEventListener('dragenter', (event) => {
      if (!this.attachments && event.dataTransfer?.types.includes('Files')) attach('drag');
    });
    // Until it is there, a drop is still taken: the browser would open the file in the frame.
    for (const type of /** @type {const} */ (['dragover', 'drop']))
      this.root.addEventListener(type, (event) => {
        if (this.attachments || !event.dataTransfer?.types.includes('Files')) return;
        event.preventDefault();
        if (type === 'drop') attach('drop', [...event.dataTransfer.files]);
      });
    // The files are taken during the event: its clipboard is empty after it.
    this.input.addEventListener('paste', (event) => {
      const files = [...(event.clipboardData?.files || [])];
      if (files.length) {
        event.preventDefault();
        attach('paste', files);
      }
    });
    // Loaded on first press (tests/test_budgets.py).
    for (const button of /** @type {NodeListOf<HTMLButtonElement>} */ (
      this.root.querySelectorAll('[data-chat-tool]')
    ))
      button.addEventListener('click', () =>
        import('./conversation-tools.js').then((tools) => tools.use(this.host, button)),
      );
    this.empty.addEventListener('click', (event) => {
      const starter = /** @type {Element} */ (event.target).closest('[data-chat-starters] button');
      if (starter) {
        this.input.value = starter.textContent;
        this.input.focus();
        this.submit();
      }
    });
    document.addEventListener('keydown', (event) => {
      if (event.key === 'Escape' && !this.config.standalone) this.requestClose();
    });
    // Every focus move inside the panel, for QA logs and tests (focus must
    // stay in the composer while an answer streams: docs/accessibility.md A8).
    document.addEventListener('focusin', (event) => {
      const target = /** @type {Element} */ (event.target);
      this.emit('focus', {
        target: target.id || target.getAttribute('data-chat-role') || target.tagName.toLowerCase(),
      });
    });
    const closeButton = this.root.querySelector('[data-chat-close]');
    if (closeButton) closeButton.addEventListener('click', () => this.requestClose());
    window.addEventListener('message', (event) => {
      if (event.source !== window.parent || !this.originAllowed(event.origin)) return;
      if (event.data?.type === 'chatwidget:opened') this.input.focus();
      // The page's ChatWidget.send() and the others, in the order called: host-api.js loads
      // for a page that uses them only (docs/embedding.md, "Driving the widget from your page").
      if (event.data?.type === 'chatwidget:api') {
        hostApi ||= import('./host-api.js').then((api) => api.init(this.host));
        hostApi.then((take) => take(event.data));
      }
      // A known visitor's token, or null: signed out (static/widget/embed.js). identity.js
      // loads only for one, so that anonymous panels stay as they were (docs/embedding.md).
      if (event.data?.type !== 'chatwidget:identity') return;
      const token = event.data.token;
      if (token) this.client.identity = token; // a send before identity.js came is theirs too
      if (token || token === null || this.client.identity)
        this.identityPart = import('./identity.js').then((identity) =>
          identity.identify(this.host, token),
        );
    });
    // Page lifecycle: come back → resume at once rather than waiting out a backoff.
    const wake = () => this.current?.wake();
    window.addEventListener('online', wake);
    window.addEventListener('pageshow', wake);
    document.addEventListener('resume', wake);
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible') wake();
      else if (this.current?.pendingText) this.current.render(false); // no frames run hidden
    });
    window.addEventListener('offline', () => this.current?.goOffline());
  }

  /** @param {string} origin */
  originAllowed(origin) {
    const allowed = this.config.hostOrigins || [];
    return allowed.includes('*') || allowed.includes(origin);
  }

  requestClose() {
    if (window.parent === window) return;
    const target = this.config.hostOrigin || '*';
    window.parent.postMessage({ type: 'chatwidget:close' }, target);
  }

  // A new answer or agent message: the loader counts it as unread while the panel is
  // closed (docs/accessibility.md A80), naming the count with these words (they stay out of
  // the loader's bytes). Only to the host origin the server vetted.
  notifyHost() {
    const host = this.config.hostOrigin;
    const names = this.strings.launcherUnread;
    if (host && window.parent !== window)
      window.parent.postMessage({ type: 'chatwidget:unread', names }, host);
  }

  // -- conversation ---------------------------------------------------------

  storageKey() {
    return `chatwidget:${this.config.apiBase}`;
  }

  async restore() {
    // What this panel stored itself comes first: only its own origin can
    // write it. The server's partitioned cookie (config.conversation) is
    // the fallback where third-party storage is blocked (docs/security.md,
    // "Controls": conversation fixation).
    let saved = null;
    try {
      saved = JSON.parse(localStorage.getItem(this.storageKey()) || 'null');
    } catch {
      // storage blocked or corrupt: the cookie, or start fresh
    }
    // A conversation of a known visitor's list has no token of its own: identity.js draws it
    // once the site's identity token has come.
    if (saved?.conversation_id && !saved.token && !this.client.identity) return;
    if (!saved?.conversation_id) saved = this.config.conversation;
    if (!saved?.conversation_id) return;
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
        this.addUserTurn(message.text, message.attachments);
      } else if (message.role !== 'assistant') {
        await (await import('./handoff.js')).restoreTurn(this.host, message); // agent, visitor
      } else if (message.state === MESSAGE_STATE.COMPLETED) {
        const turn = this.addAssistantTurn();
        turn.item.dataset.messageId = message.message_id; // its actions are restored by id
        turn.message = message;
        const view = createMarkdownView(turn.body, this.viewOptions());
        view.update(message.text);
        view.finish();
        this.setTurnState(turn, 'completed');
        if (message.sources?.length)
          loadSources().then((sources) => sources.showSources(this.host, turn, message.sources));
      } else {
        // Still being written when the page was left: resume it quietly
        // (what was already there is not re-announced).
        this.startRun({ messageId: message.message_id, restored: true });
      }
    }
    const completed = (message) =>
      message.role === 'assistant' && message.state === MESSAGE_STATE.COMPLETED;
    if (messages.some(completed)) {
      await loadActions().then(
        (actions) => actions.restoreActions(this.host),
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

  /**
   * This conversation from now on, kept across a reload.
   * @param {{ conversation_id: string, token: string }} conversation
   */
  remember(conversation) {
    this.client.conversationId = conversation.conversation_id;
    this.client.token = conversation.token;
    try {
      localStorage.setItem(this.storageKey(), JSON.stringify(conversation));
    } catch {
      /* storage unavailable: the conversation lasts as long as the page */
    }
  }

  // Another tab replaced turns (tab-sync.js): the conversation drawn again from the server's
  // history, its running answer resumed quietly, as after a reload.
  redraw() {
    this.current = null;
    this.setStreaming(false);
    this.transcript.textContent = '';
    this.config.conversation = {
      conversation_id: this.client.conversationId,
      token: this.client.token,
    };
    return this.restore();
  }

  // A start-over, here (conversation-tools.js) or in another tab (tab-sync.js).
  clearTranscript() {
    this.current = null;
    this.setStreaming(false);
    this.transcript.textContent = '';
    this.alert.textContent = '';
    this.empty.hidden = false;
    this.scroller.scrollTop = 0;
  }

  // One creation at a time: the first send and an upload (attachments.js) share the request
  // in flight, which carries the identity token of its time. A token the site gave since
  // (ChatWidget.identify) waits for that request to end, then has its own unless that one made
  // the conversation: a refusal of the old token must not answer a send made with the new one
  // (tests/e2e/test_identity_panel.py).
  ensureConversation() {
    if (this.client.conversationId) return Promise.resolve();
    const identity = this.client.identity;
    if (this.creating && this.creatingAs === identity) return this.creating;
    const before = this.creating ? this.creating.catch(() => {}) : Promise.resolve();
    const creating = before
      .then(() =>
        this.client.conversationId
          ? undefined
          : this.client
              .createConversation(this.consent?.body())
              .then((body) => this.remember(body)),
      )
      .catch((error) => {
        this.identityRefused?.(error, identity); // a known visitor's token, refused (identity.js)
        throw error;
      })
      .finally(() => {
        if (this.creating === creating) this.creating = null;
      });
    this.creating = creating;
    this.creatingAs = identity;
    return creating;
  }

  viewOptions() {
    return {
      headingOffset: this.headingLevel(), // below the turn's heading
      strings: markdownSummaries(this.strings, this.config.lang),
      dirAuto: true, // mixed-direction answers (docs/accessibility.md A66)
      code: this.codeOptions(),
      math: (formulas) => this.math(formulas),
    };
  }

  // Math (markdown.js `math`): math.js and the vendored Temml, imported with an answer's first
  // formula (never on first open, tests/test_budgets.py), draw it as MathML; until then, and
  // offline, its source stays as text, drawn once it comes (docs/accessibility.md A114).
  /** @param {NodeListOf<HTMLElement>} formulas */
  math(formulas) {
    if (this.drawMath) return this.drawMath(formulas);
    this.mathWaiting.push(...formulas);
    this.mathModule ||= import('./math.js').then(
      (module) => {
        this.drawMath = module.drawMath;
        module.drawMath(this.mathWaiting.splice(0).filter((formula) => formula.isConnected));
      },
      () => {
        this.mathModule = null; // offline: the next formula tries again
      },
    );
  }

  // Code blocks (markdown.js `code`): code-blocks.js, imported with the first fenced block
  // (never on first open, tests/test_budgets.py), colours their lines and adds Copy code (A102).
  codeOptions() {
    const load = () => {
      this.codeBlocks ||= import('./code-blocks.js').then(
        (module) => {
          const blocks = module.use(this.host);
          this.code.lines = blocks.lines;
          return blocks;
        },
        () => {
          this.codeBlocks = null; // offline: the next block tries again
          return null;
        },
      );
      return this.codeBlocks;
    };
    this.code ||= {
      lines: (language) => {
        if (language) load();
        return null;
      },
      closed: (pre, language) => load().then((blocks) => blocks?.closed(pre, language)),
    };
    return this.code;
  }

  // -- turns -----------------------------------------------------------------

  // The title is h1, then a heading per turn (docs/accessibility.md A20).
  headingLevel() {
    return this.config.turnHeadingLevel || 2;
  }

  /**
   * The visible label; a screen reader hears the heading instead.
   * @param {string} label
   * @param {string} heading
   * @returns {HTMLElement[]}
   */
  who(label, heading) {
    const visible = element('p', 'turn__who', label);
    visible.setAttribute('aria-hidden', 'true');
    return [visible, element(`h${this.headingLevel()}`, 'visually-hidden', heading)];
  }

  /**
   * @param {string} text
   * @param {Attachment[]} [files] The message's files (a restored one's, or SentFile).
   * @returns {HTMLLIElement}
   */
  addUserTurn(text, files) {
    const item = element('li', 'turn turn--user');
    item.append(
      ...this.who(this.strings.you, this.strings.turnYou),
      element('p', 'turn__body turn__body--plain', text),
    );
    // The visitor's words take their own direction (docs/accessibility.md A66).
    /** @type {HTMLElement} */ (item.lastChild).dir = 'auto';
    if (files?.length) attachments().then((module) => module.showInTurn(this.host, item, files));
    this.transcript.append(item);
    this.empty.hidden = true;
    return item;
  }

  /** @returns {AssistantTurn} */
  addAssistantTurn() {
    const item = element('li', 'turn turn--assistant');
    const body = element('div', 'turn__body md');
    const status = element('p', 'turn__status');
    const actions = element('div', 'turn__actions');
    const who = this.who(this.strings.assistant, this.strings.turnAssistant);
    item.append(...who, body, status, actions);
    this.transcript.append(item);
    this.empty.hidden = true;
    return { item, body, status, actions };
  }

  /**
   * A part's own line (handoff.js: an agent's turn, a notice): the end stays in view if the
   * reader was there.
   * @param {HTMLElement} item
   */
  addToTranscript(item) {
    const follow = this.atBottom();
    this.transcript.append(item);
    this.empty.hidden = true;
    if (follow) this.scrollToEnd();
  }

  // Follow a growing answer only if the reader is already at the bottom;
  // someone scrolled up to re-read is left where they are.
  atBottom() {
    const scroller = this.scroller;
    const below = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight;
    return below < FOLLOW_THRESHOLD_PX;
  }

  scrollToEnd() {
    this.following = true; // scroll-follow.js
    this.scroller.scrollTop = this.scroller.scrollHeight;
  }

  /**
   * @param {AssistantTurn} turn
   * @param {string} state
   * @param {string} [statusText]
   */
  setTurnState(turn, state, statusText = '') {
    turn.item.dataset.state = state;
    // aria-busy while the answer may change; removed at once at any end (docs/accessibility.md A4).
    if (state === 'streaming' || state === 'reconnecting')
      turn.item.setAttribute('aria-busy', 'true');
    else turn.item.removeAttribute('aria-busy');
    turn.status.textContent = statusText;
    turn.status.hidden = !statusText;
    // Copy, feedback, regenerate, edit: loaded once an answer ended (A21).
    if (/^(completed|cancelled|failed)$/.test(state))
      import('./answer-tools.js').then((tools) => tools.attach(this.host, turn));
    this.emit('state', { state, messageId: turn.item.dataset.messageId || '' });
  }

  /** @param {boolean} streaming */
  setStreaming(streaming) {
    const focusWasOnButton =
      document.activeElement === this.sendButton || document.activeElement === this.stopButton;
    this.sendButton.hidden = streaming;
    this.stopButton.hidden = !streaming;
    if (focusWasOnButton) this.input.focus(); // never leave focus on a hidden button
  }

  // -- sending ---------------------------------------------------------------

  async submit() {
    if (this.consent?.hold()) return; // the visitor's agreement first (consent.js)
    this.prepareFailed = false;
    // A known visitor's conversation is created before the composer lets go of the text: a
    // refused identity token keeps it there to send again (identity.js).
    if (this.identityPart) await this.identityPart.catch(() => {}); // its hooks, below
    if (this.checkIdentity && !(await this.checkIdentity())) return;
    const text = this.input.value;
    // The uploaded files (attachments.js); null while one still uploads, or offline (it says so).
    const files = this.attachments ? this.attachments.take() : [];
    if (!files || (!text.trim() && !files.length) || this.handoff?.send(text, files)) return; // to a person (handoff.js)
    if (this.current?.inProgress) {
      this.showAlert(this.strings.busy);
      return;
    }
    this.input.value = '';
    const item = this.addUserTurn(text, files);
    // A send follows the end again; the scroll waits for the frame (before its paint), so Enter
    // forces no layout before the message is on its way.
    this.following = true;
    requestAnimationFrame(() => this.scrollToEnd());
    const request = { requestId: newRequestId(), text };
    if (files.length)
      request.body = {
        request_id: request.requestId,
        text,
        attachments: files.map((f) => f.ref),
      };
    // Offline: outbox.js keeps it, to send once online.
    if (!this.hold?.(item, request)) this.startRun({ request });
  }

  /**
   * @param {{ request?: SendRequest | null, messageId?: string, restored?: boolean }} options
   * @returns {AnswerRun}
   */
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

  /** @param {string} text */
  showAlert(text) {
    // The alert region is assertive: errors only, each said once (docs/accessibility.md A6).
    if (this.emit('announce', { politeness: 'assertive', text })) this.alert.textContent = text;
  }
}

// One answer, from the POST (or a restored message id) to its end: reads,
// resumes, renders, announces and settles the turn. Its lifecycle is one
// value, `phase`, set only by enterPhase():
//   streaming → reconnecting   a read ended without the answer's end, or offline
//   reconnecting → streaming   an event was applied
//   streaming → verifying      message.completed; then → completed if the
//                              SHA-256 matches (docs/design.md), else → failed
//   streaming → cancelled | failed            message.cancelled | message.failed
//   streaming | reconnecting → failed         refused, lost, or a bug of ours
//   streaming | reconnecting → incomplete     no progress for incompleteAfterMs
//   incomplete → streaming     the person pressed Continue
// In progress (streaming, reconnecting): the turn is aria-busy, a new question
// waits, Stop cancels, renders are announced; each streaming → reconnecting is
// one outage, cued once (docs/accessibility.md A5). Verifying: still busy,
// nothing more announced. The others are the turn's end states (docs/events.md).
// Facts apart from the lifecycle: alreadyShown, stopRequested, snapshotWanted.
class AnswerRun {
  /**
   * @param {ChatPanel} panel
   * @param {{ request?: SendRequest | null, messageId?: string, restored?: boolean }} options
   *   A new message's `request`, or the `messageId` of an answer to resume (`restored`: heard
   *   before a reload).
   */
  constructor(panel, { request = null, messageId = '', restored = false }) {
    this.panel = panel;
    this.request = request;
    this.model = new AnswerModel(messageId);
    this.turn = panel.addAssistantTurn();
    this.turn.run = this;
    this.view = createMarkdownView(this.turn.body, panel.viewOptions());
    this.phase = 'streaming';
    // A restored answer's text so far was heard before the reload: no start
    // cue, and its first render moves the announcer past it.
    this.alreadyShown = restored;
    this.shared = false; // tab-sync.js: posted to the other tabs
    this.stopRequested = false; // the cancel goes out once the message id is known
    this.snapshotWanted = false; // a gap: the next read asks for a snapshot
    this.serverRetryMs = null; // the stream's `retry:` field, once sent (for a "Continue")
    /** @type {AbortController | null} wakes the offline wait */
    this.wakeController = null;
    /** @type {import('./follow.js').Follower | null} follow.js's, while the answer is followed */
    this.follower = null;
    this.pendingText = ''; // received, not yet drawn: the model's text is the view's + this
    this.renderScheduled = false;
    this.drawnOnce = false; // the first text is drawn at once, not a frame later
    this.heardLength = -1; // a restored answer: the length heard before the reload
    /** @type {(() => void) | null} finish() waits for the last slices */
    this.whenDrawn = null;
    this.dropping = new AbortController(); // drop()
  }

  get strings() {
    return this.panel.strings;
  }

  // Gone with the panel's contents (identity.js: a sign-out): no more reads, words or cues; the
  // answer goes on on the server, the visitor's to read after signing in again.
  drop() {
    this.phase = 'dropped';
    this.dropping.abort();
  }

  get inProgress() {
    return this.phase === 'streaming' || this.phase === 'reconnecting';
  }

  // Each phase but `verifying` is also the turn's state; `statusText` is its status line.
  enterPhase(phase, statusText = '') {
    this.phase = phase;
    if (phase !== 'verifying') this.panel.setTurnState(this.turn, phase, statusText);
    if (phase === 'completed' || phase === 'failed') this.panel.notifyHost();
  }

  async start() {
    const panel = this.panel;
    this.enterPhase('streaming', this.strings.stateStreaming);
    if (!this.alreadyShown) panel.announcer.start(this.strings.generating);
    if (this.request) {
      try {
        await panel.ensureConversation();
      } catch (error) {
        const reason = await this.refusal(error);
        return this.failLocally(format(this.strings.sendFailed, { reason }), error.code);
      }
    }
    try {
      await this.loop();
    } catch (error) {
      // A bug of ours must still end the answer visibly, never leave it busy.
      console.error('chat widget:', error);
      if (this.inProgress) this.fail({ code: ANSWER_FAILURE.INTERNAL.code });
    }
  }

  // Read, and resume after every drop, until a terminal event or giving up (follow.js: the
  // stall timer, the backoff from the server's `retry:`, Last-Event-ID from the model).
  async loop() {
    const config = this.panel.config;
    const client = this.panel.client;
    let lastProgress = Date.now();
    const follower = follow({
      request: ({ headers, signal }) => {
        const known = this.model.messageId;
        return client.openStream({
          send: known ? null : this.request,
          messageId: known,
          headers,
          snapshot: this.takeSnapshotWish(),
          signal,
        });
      },
      // The model's last applied event, not the last one read: after a gap it asks again.
      resumeId: () => this.model.lastEventId,
      stallTimeoutMs: config.stallTimeoutMs,
      signal: this.dropping.signal,
      retryMs: this.serverRetryMs ?? config.retryMs,
      maxBackoffMs: config.maxBackoffMs,
      refusal: errorFrom,
      retryable: (error) => !this.endingRefusal(error),
      ended: () => this.model.terminal,
      // Offline: wait for 'online' (or another wake-up), but no longer than the limit after
      // which the answer is marked incomplete.
      beforeRead: async () => {
        if (navigator.onLine) return true;
        this.loseConnection('offline');
        await this.waitForWake(lastProgress + config.incompleteAfterMs - Date.now());
        return navigator.onLine;
      },
      onEvent: ({ type, data }) => this.onEvent(type, data),
      afterRead: ({ progressed }) => {
        if (progressed) lastProgress = Date.now();
        if (this.snapshotWanted) return true; // a gap: fetch the snapshot now
        if (Date.now() - lastProgress > config.incompleteAfterMs) return false;
        this.loseConnection('reconnecting');
        return true;
      },
    });
    this.follower = follower;
    const { reason, error } = await follower.done;
    if (follower.retry != null) this.serverRetryMs = follower.retry;
    if (reason === 'aborted') return; // dropped
    if (reason === 'ended') return this.finish();
    if (reason !== 'refused') return this.giveUp(); // offline, or no progress for too long
    const ending = this.endingRefusal(error);
    if (ending === 'lost') return this.fail({ code: 'lost' });
    if (ending === 'handoff') return this.reroute();
    return this.failLocally(await this.refusal(error), error.code);
  }

  // Refused with 409 handoff_active: a person has the conversation (asked for in another tab or
  // on another device). This answer's turn goes, the composer is free, and handoff.js joins the
  // hand-off and sends the message (its text and files) to the person.
  async reroute() {
    const handoff = await import('./handoff.js');
    const panel = this.panel;
    this.phase = 'rerouted'; // no longer in progress
    const question = this.turn.item.previousElementSibling;
    this.turn.item.remove();
    if (panel.current === this) panel.current = null;
    panel.setStreaming(false);
    const request = this.request;
    return handoff.reroute(panel.host, {
      text: request?.text ?? '',
      refs: request?.body?.attachments || [],
      question,
    });
  }

  // How a refusal ends the answer, or '' when the read is tried again: network errors, stalls
  // and 5xx, and a 429 or 503 once the answer exists, after its Retry-After (docs/protocol.md,
  // "TCP close is never completion").
  endingRefusal(error) {
    if (!(error instanceof ApiError)) return '';
    // Too busy to start the answer: said, never waited out in silence.
    if ((error.status === 429 || error.status === 503) && !this.model.messageId) return 'refused';
    // The answer is gone from the server (a store restarted without persistence): say so,
    // never show a raw 404.
    if (error.status === 404 && this.model.messageId) return 'lost';
    if (error.code === ERROR.HANDOFF_ACTIVE.code) return 'handoff'; // to the person (handoff.js)
    return error.status < 500 && error.status !== 429 ? 'refused' : '';
  }

  // What to tell the user when the server refuses to start an answer: the panel's own words
  // for sending, else the reason in the panel's language (refusals.js, loaded on first use).
  async refusal(error) {
    const strings = this.strings;
    if (error.code === ERROR.TOO_MANY_RUNNING.code) return strings.busy;
    if (error.code === ERROR.RATE_LIMITED.code)
      return format(strings.rateLimited, {
        seconds: plural(strings.seconds, error.retryAfter || 60, this.panel.config.lang),
      });
    if (error.code === ERROR.STORE_UNAVAILABLE.code || error.code === ERROR.SERVER_BUSY.code)
      return strings.errors.unavailable;
    this.panel.identityRefused?.(error); // a conversation of the visitor's list (identity.js)
    return (await import('./refusals.js')).reasonFor(this.panel.host, error);
  }

  takeSnapshotWish() {
    const wanted = this.snapshotWanted;
    this.snapshotWanted = false;
    return wanted;
  }

  // Returns whether the event moved the answer forward (a new sequence number).
  onEvent(type, data) {
    const seqBefore = this.model.lastSeq;
    const outcome = this.model.apply(type, data);
    if (outcome === 'gap') {
      // A missing sequence number: do not guess, ask for a snapshot.
      this.snapshotWanted = true;
      this.follower.resumeNow();
      return false;
    }
    this.panel.emit('event', { type, seq: data.seq, outcome });
    if (outcome !== 'applied') return false;
    this.turn.item.dataset.messageId = this.model.messageId;
    this.regainConnection();
    if (this.stopRequested && type === ANSWER_EVENT.MESSAGE_STARTED) this.sendCancel();
    if (type === ANSWER_EVENT.TEXT_DELTA) {
      this.pendingText += data.text;
      if (this.drawnOnce) this.scheduleRender();
      else this.render(false);
    } else if (type === ANSWER_EVENT.MESSAGE_SNAPSHOT) {
      this.render(true);
    } else if (type === ANSWER_EVENT.MESSAGE_PROGRESS) {
      this.showProgress(data.text);
    }
    return this.model.lastSeq > seqBefore;
  }

  // What the backend is doing (`message.progress`): the turn's status line while it streams,
  // and a cue through the one Announcer, which says each line once, 2 s apart at most
  // (docs/accessibility.md A110). Never the answer's text: the model keeps it apart.
  /** @param {string} text */
  showProgress(text) {
    if (this.phase === 'streaming') {
      this.turn.status.textContent = text;
      this.turn.status.hidden = false;
    }
    if (!this.alreadyShown) this.panel.announcer.progress(text);
  }

  // The status line of a streaming answer: its newest progress line, else "Generating…".
  streamingStatus() {
    return this.model.progress || this.strings.stateStreaming;
  }

  // Render at most once per frame (or per 100 ms when hidden, where frames
  // do not run): 5,000 deltas must not mean 5,000 layouts.
  scheduleRender() {
    if (this.renderScheduled) return;
    this.renderScheduled = true;
    const renderDeltas = () => {
      this.renderScheduled = false;
      this.render(false);
    };
    if (document.visibilityState === 'visible') requestAnimationFrame(renderDeltas);
    else setTimeout(renderDeltas, 100);
  }

  // Draws a frame's share; the rest is left to the next frame (one render per frame: a render
  // outside a frame, for a snapshot or the end, does not schedule a second one).
  render(snapshot) {
    if (snapshot) {
      // The model's whole text supersedes any deltas not yet drawn: what the view lacks of
      // it is drawn next (from scratch if the view's text is not where it starts).
      const text = this.model.text;
      const shown = this.view.text();
      if (!text.startsWith(shown)) this.view.update('');
      this.pendingText = text.slice(this.view.text().length);
    }
    this.drawSlices();
    if (this.pendingText) this.scheduleRender();
    else this.whenDrawn?.();
    if (!this.inProgress) return; // after the end, renders no longer feed the announcer
    if (this.alreadyShown) {
      // Restored: what was there at the first render was heard before the reload.
      if (this.heardLength < 0)
        this.heardLength = this.view.text().length + this.pendingText.length;
      if (this.view.text().length < this.heardLength) return;
      this.alreadyShown = false;
      this.panel.announcer.skipTo(this.view);
    } else {
      this.panel.announcer.update(this.view);
    }
  }

  // Draw pending text, a slice at a time, until the frame's budget is spent (all of it when
  // the panel is hidden: no one waits on a frame then).
  drawSlices() {
    if (this.pendingText) this.drawnOnce = true;
    const timed = document.visibilityState === 'visible';
    const until = performance.now() + FRAME_BUDGET_MS;
    let drawn = 0;
    while (this.pendingText) {
      const pending = this.pendingText;
      let end = pending.length;
      if (timed && end > SLICE_CHARS) {
        const blank = pending.indexOf('\n\n', SLICE_CHARS);
        const line = pending.indexOf('\n', SLICE_CHARS);
        if (blank >= 0 && blank < 2 * SLICE_CHARS) end = blank + 2;
        else if (line >= 0) end = line + 1;
      }
      this.view.append(pending.slice(0, end));
      this.pendingText = pending.slice(end);
      drawn += end;
      if (timed && (drawn >= FRAME_CHARS || performance.now() >= until)) break;
    }
  }

  // Resolves once everything received is drawn.
  drawn() {
    if (!this.pendingText) return Promise.resolve();
    return new Promise((resolve) => {
      this.whenDrawn = () => {
        this.whenDrawn = null;
        resolve();
      };
    });
  }

  // The connection is lost: 'offline' (the browser says so) or
  // 'reconnecting' (a read ended or failed without the answer's end).
  loseConnection(reason) {
    if (!this.inProgress || this.model.terminal) return; // ended: only its last slices remain
    const text = reason === 'offline' ? this.strings.offline : this.strings.reconnecting;
    if (this.phase === 'streaming') this.panel.announcer.cue(text); // once per outage
    this.enterPhase('reconnecting', text);
  }

  regainConnection() {
    if (this.phase === 'reconnecting') this.enterPhase('streaming', this.streamingStatus());
  }

  // The browser says the network is gone: a read in flight cannot deliver
  // (in real life it would stall until the stall timer), so stop it and
  // wait for 'online', counting toward the incomplete limit.
  goOffline() {
    if (!this.inProgress) return;
    this.loseConnection('offline');
    this.follower?.drop();
  }

  waitForWake(milliseconds) {
    this.wakeController = new AbortController();
    return sleep(Math.max(0, milliseconds), this.wakeController.signal);
  }

  wake() {
    this.wakeController?.abort(); // the offline wait
    this.follower?.wake(); // the backoff
  }

  async cancel() {
    if (!this.inProgress) return;
    this.stopRequested = true;
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
    const strings = this.strings;
    this.reportRepairs();
    this.render(true); // the whole text, exactly as verified below
    await this.drawn(); // in slices, a frame at a time
    this.view.finish();
    if (model.state === MESSAGE_STATE.COMPLETED) {
      this.enterPhase('verifying');
      if (await model.verify()) {
        this.enterPhase('completed');
        this.panel.announcer.finish(this.view, strings.complete);
        // After the completion cue, said once (A111); only now: completed and verified.
        if (model.sources.length)
          (await loadSources()).showSources(this.panel.host, this.turn, model.sources, {
            announce: true,
          });
        const offered = model.actionable; // only now: completed and verified
        if (offered.length)
          (await loadActions()).offerActions(this.panel.host, this.turn, model.messageId, offered);
      } else {
        this.fail({
          code: 'integrity',
          message: strings.errors.integrity,
          retryable: true,
        });
      }
    } else if (model.state === MESSAGE_STATE.CANCELLED) {
      this.enterPhase('cancelled', strings.stateCancelled);
      this.panel.announcer.interrupt(strings.cancelled);
    } else {
      this.fail(model.error || ANSWER_FAILURE.INTERNAL);
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
    this.error = error; // its code, for the host page (host-api.js)
    const strings = this.strings;
    const message = strings.errors[error.code] || error.message || strings.errors.internal;
    // What arrived before a failure stays visible, marked incomplete.
    const partial = this.model.text ? `${strings.stateIncomplete}. ` : '';
    this.turn.item.classList.add('turn--failed');
    this.enterPhase('failed', `${partial}${strings.stateFailed}: ${message}`);
    this.panel.announcer.interrupt(null);
    this.panel.showAlert(message);
    this.offerRetry(false);
  }

  // `refused`: the server's code, for the host page (host-api.js); the words are the panel's.
  failLocally(message, refused) {
    this.fail({ code: '', message, refused });
  }

  giveUp() {
    this.enterPhase('incomplete', this.strings.stateIncomplete);
    this.panel.announcer.interrupt(this.strings.incomplete);
    this.offerRetry(true);
  }

  // docs/design.md, "Errors that say what to do next": "continue" resumes
  // the same run (same request, from the last event); "ask again"
  // regenerates with a new request id.
  offerRetry(canContinue) {
    const strings = this.strings;
    const actions = this.turn.actions;
    actions.textContent = '';
    if (canContinue) {
      const resume = element('button', 'button button--secondary', strings.retryContinue);
      resume.type = 'button';
      resume.addEventListener('click', () => {
        actions.textContent = '';
        this.panel.input.focus();
        this.panel.current = this;
        this.panel.setStreaming(true);
        this.enterPhase('streaming', this.streamingStatus());
        this.loop().finally(() => this.panel.setStreaming(false));
      });
      actions.append(resume);
    }
    const text = this.request?.text;
    const files = this.request?.body?.attachments; // sent again with it (attachments.js)
    if (text || files) {
      const again = element(
        'button',
        'button button--secondary',
        canContinue ? strings.regenerate : strings.retry,
      );
      again.type = 'button';
      again.addEventListener('click', () => {
        actions.textContent = '';
        this.panel.input.focus();
        const request = { requestId: newRequestId(), text };
        if (files)
          request.body = {
            request_id: request.requestId,
            text,
            attachments: files,
          };
        this.panel.startRun({ request });
      });
      actions.append(again);
    }
  }
}
