// Around an answer (docs/accessibility.md, "Around an answer", A20–A29):
// under each ended answer (completed, or failed or stopped with some text), a
// labelled group of buttons: Copy answer, Read the whole answer (a modal
// dialog), Regenerate answer (the last answer only), Helpful / Not helpful
// (toggle buttons, then an optional comment); under the last question, Edit
// message. Nothing here takes focus by itself or speaks more than once: each
// outcome is one polite cue through the panel's one Announcer (A5), each
// failure one alert (A6).
//
// Loaded by chat.js (`loadTools`) when the first answer ends or a restored
// conversation shows ended answers: not part of the panel's first open
// (tests/test_budgets.py). Its stylesheet is its own file, linked from here
// (the panel's CSP allows same-origin stylesheets, never inline styles).
// Regenerate and edit start an ordinary AnswerRun (chat.js) whose request
// posts to their own URL (client.js `openStream`: `send.url`, `send.body`),
// so the new answer streams, resumes and is announced like any other.

import { newRequestId } from './client.js';
import { writeClipboard } from './clipboard.js';
import { button, element, showModal } from './dom.js';
import { format } from './i18n.js';
import { lazyStrings, linkStylesheet } from './lazy-parts.js';
import { createMarkdownView } from './markdown.js';
import { reasonFor } from './refusals.js';

/** @typedef {import('./host.js').PanelHost} PanelHost */

// The rows above are drawn once the stylesheet is in: never unstyled buttons
// for a frame (a failed load still draws them, with the panel's own styles).
const stylesheet = linkStylesheet(new URL('./answer-tools.css', import.meta.url).href);

// The server's FEEDBACK_COMMENT_MAX_CHARS default (docs/protocol.md), when the
// panel's configuration does not say.
const COMMENT_MAX_CHARS = 500;

// The classes of the forms' and the dialog's text buttons: a secondary one, and the primary.
const TEXT_TOOL = 'button button--secondary tool';
const PRIMARY_TOOL = 'button tool';

// -- icon buttons ------------------------------------------------------------
//
// The answer's tools are one compact row of icons (as in ChatGPT, ChatKit,
// assistant-ui) rather than a wall of text buttons. Each keeps its name in
// aria-label (docs/accessibility.md A21–A28) and shows the same words as a
// tooltip on hover and on keyboard focus (WCAG 2.2 SC 1.4.13; SC 2.5.3, the
// visible label is the name). The tooltip is answer-tools.css's `::after`
// with `attr(data-tip)` and empty alternative text, so it is never heard on
// top of the name. Icons are drawn with createElementNS: no markup from strings.

const SVG_NS = 'http://www.w3.org/2000/svg';

// 24×24 outlines; a path marked `fill` is filled when its button is pressed
// (Helpful, Not helpful: the state is shown by shape, not colour alone, A28).
const ICONS = {
  copy: [
    {
      d: 'M11 9h8a2 2 0 0 1 2 2v8a2 2 0 0 1-2 2h-8a2 2 0 0 1-2-2v-8a2 2 0 0 1 2-2z',
    },
    { d: 'M5 15a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2h8a2 2 0 0 1 2 2' },
  ],
  read: [{ d: 'M14 4h6v6M20 4l-7 7M10 20H4v-6M4 20l7-7' }],
  regenerate: [{ d: 'M20 12a8 8 0 1 1-2.9-6.2' }, { d: 'M18 2v4.5h-4.5' }],
  up: [
    {
      d: 'M7 11v9H4.5a1.5 1.5 0 0 1-1.5-1.5v-6A1.5 1.5 0 0 1 4.5 11z',
      fill: true,
    },
    {
      d: 'M7 11l3.6-7.2A2.5 2.5 0 0 1 14 6v4h4.6a2 2 0 0 1 2 2.3l-1.1 6A2 2 0 0 1 17.5 20H7z',
      fill: true,
    },
  ],
  pencil: [{ d: 'M15.5 4.5l4 4L9 19l-5 1 1-5zM13.5 6.5l4 4' }],
};
ICONS.down = ICONS.up.map((path) => ({ ...path, turned: true }));

function icon(name) {
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  svg.setAttribute('class', 'icon-tool__icon');
  for (const { d, fill, turned } of ICONS[name]) {
    const path = document.createElementNS(SVG_NS, 'path');
    path.setAttribute('d', d);
    if (fill) path.setAttribute('class', 'icon-tool__fill');
    if (turned) path.setAttribute('transform', 'rotate(180 12 12)'); // thumb down
    svg.append(path);
  }
  return svg;
}

// `tip` says where the tooltip lines up with its button ('start', 'center',
// 'end'; logical, so it mirrors in right-to-left text) so that it stays inside
// the transcript's scroller, which would clip it (overflow-y: auto).
function iconButton(name, iconName, onClick, tip = 'start') {
  const node = element('button', `icon-tool icon-tool--tip-${tip}`);
  node.type = 'button';
  node.setAttribute('aria-label', name);
  node.dataset.tip = name;
  node.append(icon(iconName));
  node.addEventListener('click', (event) => {
    // The tooltip is part of the button (it must stay while the pointer is
    // over it, SC 1.4.13): a click on it is not a press. A keyboard press has
    // no pointer (detail 0).
    const box = node.getBoundingClientRect();
    const outside =
      event.clientX < box.left ||
      event.clientX > box.right ||
      event.clientY < box.top ||
      event.clientY > box.bottom;
    if (event.detail > 0 && outside) return;
    onClick(event);
  });
  node.addEventListener('focusout', () => node.classList.remove('icon-tool--quiet'));
  node.addEventListener('pointerleave', () => node.classList.remove('icon-tool--quiet'));
  return node;
}

// Escape hides a shown tooltip without moving focus or the pointer (SC 1.4.13,
// dismissible). When the tooltip is the focused button's own, that Escape is
// spent on it: the panel stays open (chat.js closes it on Escape); the next
// Escape closes the panel as anywhere else. Captured on the document, before
// chat.js and the comment field hear it.
document.addEventListener(
  'keydown',
  (event) => {
    if (event.key !== 'Escape') return;
    const shown = Array.from(document.querySelectorAll('.icon-tool:not(.icon-tool--quiet)')).filter(
      (node) => node.matches(':hover') || node.matches(':focus-visible'),
    );
    for (const node of shown) node.classList.add('icon-tool--quiet');
    if (shown.includes(document.activeElement)) {
      event.preventDefault();
      event.stopPropagation();
    }
  },
  true,
);

// Hide a control; focus on it goes to the composer, never to the page's body.
/**
 * @param {PanelHost} host
 * @param {HTMLElement} node
 * @param {boolean} hidden
 */
function conceal(host, node, hidden) {
  if (hidden && node.contains(document.activeElement)) host.input.focus();
  node.hidden = hidden;
}

// Enter sends, Shift+Enter adds a line (as in the composer, A9); Escape
// cancels here and must not close the whole panel (chat.js listens on document).
function keys(field, { submit, cancel }) {
  field.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    } else if (event.key === 'Escape') {
      event.preventDefault();
      event.stopPropagation();
      cancel();
    }
  });
}

// This module's strings (`answerTools`, web.py LAZY_STRING_GROUPS): null while they
// cannot be fetched (offline), and the next ended answer tries again.
const loadWords = (host) => lazyStrings(host, 'answerTools');

// What the module keeps per panel: its strings, its dialog and each turn's tools.
const panels = new WeakMap();

/** @param {PanelHost} host */
function stateOf(host) {
  let state = panels.get(host);
  if (!state) {
    state = { tools: new Map(), edits: new Map(), dialog: null, words: null };
    panels.set(host, state);
    // A new answer starts: the older turns' Regenerate and Edit go at once.
    host.on('state', () => refresh(host));
  }
  return state;
}

const attaching = new WeakSet();

// chat.js calls this whenever a turn ends completed, cancelled or failed.
/**
 * @param {PanelHost} host
 * @param {import('./host.js').AssistantTurn} turn
 */
export async function attach(host, turn) {
  const item = turn.item;
  if (attaching.has(item)) return;
  attaching.add(item);
  // The exact text: a finished run's verified model text (its SHA-256 is the
  // server's), or the history's text for a restored answer.
  const text = turn.run ? turn.run.model.text : turn.message?.text || '';
  if (!text) return; // nothing arrived: nothing to copy, rate or read
  const [words] = await Promise.all([loadWords(host), stylesheet]);
  if (!words) attaching.delete(item); // not drawn this time (offline): a later call may
  if (!item.isConnected || !words) return;
  stateOf(host).words = words;
  stateOf(host).tools.set(item, new AnswerTools(host, turn, text));
  refresh(host);
}

// Regenerate on the last answer only, Edit on the last question only, and
// neither while an answer is being written (the server would refuse: 409).
/** @param {PanelHost} host */
function refresh(host) {
  const state = stateOf(host);
  const busy = Boolean(host.currentRun()?.inProgress);
  const turns = /** @type {HTMLElement[]} */ (Array.from(host.transcript.children));
  const lastAnswer = turns.findLast((li) => li.classList.contains('turn--assistant'));
  const lastQuestion = turns.findLast((li) => li.classList.contains('turn--user'));
  const settled = !busy && lastAnswer?.dataset.state === 'completed';
  for (const [item, tools] of state.tools) {
    if (!item.isConnected) state.tools.delete(item);
    else tools.offerRegenerate(settled && item === lastAnswer);
  }
  const editable = settled && lastQuestion?.nextElementSibling === lastAnswer ? lastQuestion : null;
  if (editable && !state.edits.has(editable))
    state.edits.set(editable, new EditControl(host, editable));
  for (const [item, edit] of state.edits) {
    if (!item.isConnected) state.edits.delete(item);
    else edit.offer(item === editable);
  }
}

class AnswerTools {
  /**
   * @param {PanelHost} host
   * @param {import('./host.js').AssistantTurn} turn
   * @param {string} text
   */
  constructor(host, turn, text) {
    this.host = host;
    this.turn = turn;
    this.text = text;
    this.messageId = turn.item.dataset.messageId || '';
    /** @type {'' | 'up' | 'down'} '': not rated */
    this.rating = '';
    this.busy = false;
    const words = stateOf(host).words;
    this.node = element('div', 'tools');
    this.node.setAttribute('role', 'group');
    this.node.setAttribute('aria-label', words.group);
    const copy = iconButton(words.copy, 'copy', () => this.copy());
    copy.dataset.chatRole = 'answer-copy';
    const read = iconButton(words.read, 'read', () => dialogOf(host).open(text, read));
    read.dataset.chatRole = 'answer-read';
    this.node.append(copy, read);
    // An answer without a message id (refused before it started) has nothing
    // on the server to regenerate or rate.
    if (this.messageId) {
      this.regenerateButton = iconButton(
        words.regenerate,
        'regenerate',
        () => this.regenerate(),
        'center',
      );
      this.regenerateButton.dataset.chatRole = 'answer-regenerate';
      this.regenerateButton.hidden = true;
      this.up = this.toggle(words.helpful, 'up');
      this.down = this.toggle(words.notHelpful, 'down');
      this.node.append(this.regenerateButton, this.up, this.down);
      // Feedback given before a reload is shown again, silently.
      this.setRating(turn.message?.feedback?.rating || '');
    }
    // Before the turn's actions (an action card, Retry): from the composer,
    // Shift+Tab reaches the next step first (docs/accessibility.md, "Actions").
    turn.actions.before(this.node);
  }

  offerRegenerate(offered) {
    if (this.regenerateButton) conceal(this.host, this.regenerateButton, !offered);
  }

  // -- copy -------------------------------------------------------------------

  async copy() {
    const host = this.host;
    const words = stateOf(host).words;
    if (!(await writeClipboard(this.text))) {
      host.showAlert(words.copyFailed);
      return;
    }
    host.announcer.cue(words.copied);
    host.emit('copy', { messageId: this.messageId });
  }

  // -- regenerate -------------------------------------------------------------

  regenerate() {
    const host = this.host;
    if (host.currentRun()?.inProgress) {
      host.showAlert(host.strings.busy);
      return;
    }
    const item = this.turn.item;
    // The question, for the failed run's "Ask again" (chat.js offerRetry).
    const question = item.previousElementSibling?.querySelector('.turn__body')?.textContent || '';
    const requestId = newRequestId();
    host.input.focus(); // this button leaves with its turn; focus stays in the composer (A8)
    item.remove(); // the new answer takes its place: it is the last turn
    host.startRun({
      request: {
        requestId,
        text: question,
        url: `${host.client.messageUrl(this.messageId)}/regenerate`,
        body: { request_id: requestId },
      },
    });
  }

  // -- feedback ---------------------------------------------------------------

  toggle(text, rating) {
    const node = iconButton(text, rating, () => this.rate(rating), 'end');
    node.setAttribute('aria-pressed', 'false');
    node.dataset.chatRole = `answer-${rating}`;
    return node;
  }

  setRating(rating) {
    this.rating = rating;
    this.up.setAttribute('aria-pressed', String(rating === 'up'));
    this.down.setAttribute('aria-pressed', String(rating === 'down'));
  }

  // Pressing the pressed button takes the rating back; the other replaces it.
  async rate(rating) {
    if (this.busy) return; // a double press sends one request
    const host = this.host;
    const words = stateOf(host).words;
    const next = this.rating === rating ? '' : rating;
    this.busy = true;
    try {
      if (next) await host.client.putFeedback(this.messageId, { rating: next });
      else await host.client.deleteFeedback(this.messageId);
    } catch (error) {
      host.showAlert(format(words.feedbackFailed, { reason: await reasonFor(host, error) }));
      return;
    } finally {
      this.busy = false;
    }
    this.setRating(next);
    host.announcer.cue(next ? words.rated : words.unrated);
    host.emit('feedback', {
      messageId: this.messageId,
      rating: next || null,
      comment: '',
    });
    this.showComment(Boolean(next));
  }

  // The optional comment: right after the pressed button in the tab order,
  // never focused by itself.
  showComment(shown) {
    if (!shown) {
      if (this.comment) this.closeComment(false);
      return;
    }
    if (!this.comment) this.comment = this.commentForm();
    this.comment.field.value = '';
    this.node.append(this.comment.form);
  }

  commentForm() {
    const words = stateOf(this.host).words;
    const form = element('form', 'tools__comment');
    const id = `comment-${this.messageId}`;
    const label = element('label', 'tools__label', words.comment);
    label.htmlFor = id;
    const field = element('textarea', 'tools__field');
    field.id = id;
    field.rows = 2;
    field.maxLength = this.host.config.feedbackCommentMaxChars || COMMENT_MAX_CHARS;
    const send = button(PRIMARY_TOOL, words.commentSend);
    send.type = 'submit';
    const skip = button(TEXT_TOOL, words.commentSkip, () => this.closeComment(true));
    const buttons = element('div', 'tools__buttons');
    buttons.append(send, skip);
    form.append(label, field, buttons);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.sendComment();
    });
    keys(field, {
      submit: () => this.sendComment(),
      cancel: () => this.closeComment(true),
    });
    return { form, field };
  }

  // Focus inside the form when it goes back to the pressed rating button.
  closeComment(restoreFocus) {
    const { form } = this.comment;
    const hadFocus = form.contains(document.activeElement);
    form.remove();
    if (restoreFocus || hadFocus) (this.rating === 'down' ? this.down : this.up).focus();
  }

  async sendComment() {
    const host = this.host;
    const words = stateOf(host).words;
    const comment = this.comment.field.value.trim();
    if (!comment) return this.closeComment(true);
    if (this.busy || !this.rating) return;
    this.busy = true;
    try {
      await host.client.putFeedback(this.messageId, {
        rating: this.rating,
        comment,
      });
    } catch (error) {
      host.showAlert(format(words.feedbackFailed, { reason: await reasonFor(host, error) }));
      return;
    } finally {
      this.busy = false;
    }
    this.closeComment(true);
    host.announcer.cue(words.commentSent);
    host.emit('feedback', {
      messageId: this.messageId,
      rating: this.rating,
      comment,
    });
  }
}

// -- the whole answer, in a modal dialog (A26) --------------------------------

/** @param {PanelHost} host */
function dialogOf(host) {
  const state = stateOf(host);
  if (!state.dialog) state.dialog = new AnswerDialog(host);
  return state.dialog;
}

class AnswerDialog {
  /** @param {PanelHost} host */
  constructor(host) {
    this.host = host;
    this.opener = null;
    const words = stateOf(host).words;
    const dialog = element('dialog', 'answer-dialog');
    const title = element('h2', 'answer-dialog__title', words.dialog);
    title.id = 'answer-dialog-title';
    dialog.setAttribute('aria-labelledby', title.id);
    // The text scrolls inside a labelled region that takes focus first: a
    // screen reader starts reading there, the arrow keys scroll it.
    const text = element('div', 'answer-dialog__text md');
    text.tabIndex = 0;
    text.setAttribute('role', 'region');
    text.setAttribute('aria-labelledby', title.id);
    text.dataset.chatRole = 'answer-dialog-text';
    const close = button(PRIMARY_TOOL, words.close, () => dialog.close());
    close.dataset.chatRole = 'answer-dialog-close';
    dialog.append(title, text, close);
    dialog.addEventListener('keydown', (event) => this.onKey(event));
    // However it closes (Close, Escape, the browser's close request): focus
    // goes back to the button that opened it. Closed, it leaves the DOM.
    dialog.addEventListener('close', () => {
      dialog.remove();
      (this.opener?.isConnected ? this.opener : host.input).focus();
      this.opener = null;
    });
    this.dialog = dialog;
    this.text = text;
    this.close = close;
  }

  open(answer, opener) {
    this.opener = opener;
    this.text.textContent = '';
    const view = createMarkdownView(this.text, {
      ...this.host.viewOptions(),
      headingOffset: 2, // below the dialog's h2
    });
    view.update(answer);
    view.finish();
    this.host.root.append(this.dialog);
    showModal(this.dialog);
    this.text.scrollTop = 0;
    this.text.focus();
  }

  // showModal() makes the rest of the panel inert, but in an iframe Tab would
  // still leave for the host page: keep it inside (WAI-ARIA APG, Dialog (Modal)).
  onKey(event) {
    if (event.key === 'Escape') {
      event.preventDefault();
      event.stopPropagation(); // close this dialog, not the whole panel
      this.dialog.close();
      return;
    }
    if (event.key !== 'Tab') return;
    const links = /** @type {NodeListOf<HTMLAnchorElement>} */ (
      this.text.querySelectorAll('a[href]')
    );
    const focusable = [this.text, ...links, this.close];
    const first = focusable[0];
    const last = focusable[focusable.length - 1];
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  }
}

// -- edit the last question (A25) ---------------------------------------------

class EditControl {
  /**
   * @param {PanelHost} host
   * @param {HTMLElement} item
   */
  constructor(host, item) {
    this.host = host;
    this.item = item;
    this.node = element('div', 'tools tools--user');
    this.button = iconButton(stateOf(host).words.edit, 'pencil', () => this.begin(), 'end');
    this.button.dataset.chatRole = 'turn-edit';
    this.node.append(this.button);
    this.form = null;
  }

  // Out of the DOM when not offered: nothing hidden is left to measure or reach.
  offer(offered) {
    if (!offered && this.form) this.end(false);
    if (offered && !this.form) this.item.append(this.node);
    else if (this.node.isConnected) {
      if (this.node.contains(document.activeElement)) this.host.input.focus();
      this.node.remove();
    }
  }

  // The question's text in a labelled field in place of the question.
  begin() {
    const host = this.host;
    const words = stateOf(host).words;
    const body = /** @type {HTMLElement} */ (this.item.querySelector('.turn__body'));
    const form = element('form', 'tools__comment turn-edit');
    const label = element('label', 'tools__label', words.editLabel);
    label.htmlFor = 'turn-edit-field';
    const field = element('textarea', 'tools__field');
    field.id = 'turn-edit-field';
    field.rows = 3;
    field.maxLength = host.input.maxLength;
    field.value = body.textContent;
    const send = button(PRIMARY_TOOL, words.editSend);
    send.type = 'submit';
    const cancel = button(TEXT_TOOL, words.editCancel, () => this.end(true));
    const buttons = element('div', 'tools__buttons');
    buttons.append(send, cancel);
    form.append(label, field, buttons);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.submit();
    });
    keys(field, { submit: () => this.submit(), cancel: () => this.end(true) });
    body.hidden = true;
    this.node.remove(); // the field takes the place of the question and its button
    this.item.append(form);
    this.form = { form, field, body };
    field.focus();
  }

  end(restoreFocus) {
    const { form, body } = this.form;
    const hadFocus = form.contains(document.activeElement);
    form.remove();
    body.hidden = false;
    this.item.append(this.node);
    this.form = null;
    if (restoreFocus || hadFocus) this.button.focus();
  }

  // The edited question and its new answer replace the old pair
  // (POST …/messages/{user message id}/edit, docs/protocol.md).
  async submit() {
    const host = this.host;
    const strings = host.strings;
    const text = this.form.field.value;
    if (!text.trim()) return;
    if (host.currentRun()?.inProgress) {
      host.showAlert(strings.busy);
      return;
    }
    // A question sent in this page has no message id here yet: the history has it.
    let messageId;
    try {
      messageId = (await host.client.history()).findLast((m) => m.role === 'user')?.message_id;
      if (!messageId) throw Object.assign(new Error('no message to edit'), { code: 'lost' });
    } catch (error) {
      host.showAlert(format(strings.sendFailed, { reason: await reasonFor(host, error) }));
      return;
    }
    const answer = this.item.nextElementSibling;
    host.input.focus(); // as after any send (A8)
    this.item.remove();
    answer?.remove();
    host.addUserTurn(text);
    host.scrollToEnd();
    const requestId = newRequestId();
    host.startRun({
      request: {
        requestId,
        text,
        url: `${host.client.messageUrl(messageId)}/edit`,
        body: { request_id: requestId, text },
      },
    });
  }
}
