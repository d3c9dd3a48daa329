// A known visitor's conversations (docs/accessibility.md, "Known visitors"): the header's
// Conversations control (shown by identity.js while the site gave an identity token) opens a
// view of the visitor's list (GET /api/v1/me/conversations), most recent first, each a button
// naming its title and its last activity in words; choosing one draws its history and resumes
// an answer still being written, as after a reload (chat.js restore, with the identity token
// as its Bearer: client.js). Loaded on the control's first press, with its strings
// (i18n/conversations/<lang>.json) and stylesheet: never part of a first open
// (tests/test_budgets.py).
//
// A disclosure (WAI-ARIA APG, "Disclosure"): the control's aria-expanded says whether the view
// is shown; it replaces the transcript and the composer while open; focus moves into it (its
// first conversation, else its heading) and back to the control when it closes: Escape, its
// Close button, the control again.

import { element } from './dom.js';
import { format } from './i18n.js';
import { refused } from './identity.js';
import { lazyStrings, linkStylesheet } from './lazy-parts.js';
import { reasonFor } from './refusals.js';

/** @typedef {import('./host.js').PanelHost} PanelHost */
/** @typedef {import('./client.js').OwnConversation} OwnConversation */

const stylesheetUrl = new URL('./conversations.css', import.meta.url).href;
const OPEN_CLASS = 'chat--conversations';

// Units for "5 minutes ago", largest first, in seconds (Intl.RelativeTimeFormat words them in
// the panel's language, plural forms and all, from CLDR as Intl.PluralRules does for i18n.js).
/** @type {[Intl.RelativeTimeFormatUnit, number][]} */
const UNITS = [
  ['year', 31536000],
  ['month', 2592000],
  ['week', 604800],
  ['day', 86400],
  ['hour', 3600],
  ['minute', 60],
  ['second', 1],
];

/**
 * How long ago `iso` was, in words: "5 minutes ago", "yesterday", "now".
 * @param {string} iso
 * @param {string} lang
 * @param {number} [now]
 * @returns {string}
 */
export function ago(iso, lang, now = Date.now()) {
  const seconds = Math.round((Date.parse(iso) - now) / 1000);
  const words = new Intl.RelativeTimeFormat(lang, { numeric: 'auto' });
  for (const [unit, size] of UNITS)
    if (Math.abs(seconds) >= size || unit === 'second')
      return words.format(Math.trunc(seconds / size), unit);
  return '';
}

/**
 * @param {PanelHost} host
 * @param {HTMLButtonElement} control
 */
export async function toggle(host, control) {
  const view = /** @type {HTMLElement | null} */ (host.root.querySelector('#chat-conversations'));
  if (view && !view.hidden) return close(host, control, true);
  const [strings] = await Promise.all([
    lazyStrings(host, 'conversations', 'conversations/'),
    linkStylesheet(stylesheetUrl),
  ]);
  if (!strings) return; // offline before the strings came: the next press tries again
  open(host, control, view || build(host, control, strings), strings);
}

/**
 * @param {PanelHost} host
 * @param {HTMLButtonElement} control
 * @param {Record<string, string>} strings
 * @returns {HTMLElement}
 */
function build(host, control, strings) {
  const view = element('section', 'chat-conversations');
  view.id = 'chat-conversations';
  view.hidden = true;
  view.setAttribute('aria-labelledby', 'chat-conversations-title');
  const title = element('h2', 'chat-conversations__title', strings.heading);
  title.id = 'chat-conversations-title';
  title.tabIndex = -1;
  const list = element('ul', 'chat-conversations__list');
  const status = element('p', 'chat-conversations__status');
  const closeButton = element('button', 'button button--secondary', strings.close);
  closeButton.type = 'button';
  closeButton.addEventListener('click', () => close(host, control, true));
  view.append(title, status, list, closeButton);
  // The panel's document-level Escape closes the whole chat (chat.js bind): this one closes
  // the view only.
  view.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape') return;
    event.stopPropagation();
    close(host, control, true);
  });
  // identity.js: a sign-out, or a token taken back, closes it.
  view.addEventListener('chatwidget-close', () => close(host, control, false));
  control.setAttribute('aria-controls', view.id);
  host.root.querySelector('.chat__header')?.after(view);
  return view;
}

/**
 * @param {PanelHost} host
 * @param {HTMLButtonElement} control
 * @param {HTMLElement} view
 * @param {Record<string, string>} strings
 */
async function open(host, control, view, strings) {
  const list = /** @type {HTMLUListElement} */ (view.querySelector('ul'));
  const status = /** @type {HTMLElement} */ (view.querySelector('p'));
  const title = /** @type {HTMLElement} */ (view.querySelector('h2'));
  list.textContent = '';
  status.textContent = strings.loading;
  status.hidden = false;
  view.hidden = false;
  host.root.classList.add(OPEN_CLASS);
  control.setAttribute('aria-expanded', 'true');
  title.focus();
  /** @type {OwnConversation[]} */
  let conversations;
  try {
    conversations = await host.client.ownConversations();
  } catch (error) {
    refused(host, error); // an expired token: the site is told (identity.js)
    status.textContent = format(strings.failed, { reason: await reasonFor(host, error) });
    return;
  }
  if (view.hidden) return; // closed while the list came
  const lang = host.config.lang;
  for (const conversation of conversations) {
    const item = element('li', 'chat-conversations__item');
    const choice = element('button', 'chat-conversations__choice');
    choice.type = 'button';
    // "{title} — {when}": the title takes its own direction (docs/accessibility.md A66), the
    // words around it the panel's.
    const [before, after] = strings.item.split('{title}');
    const name = element('bdi', '', conversation.title || strings.untitled);
    choice.append(
      before,
      name,
      format(after ?? '', { when: ago(conversation.last_activity, lang) }),
    );
    if (conversation.conversation_id === host.client.conversationId)
      choice.setAttribute('aria-current', 'true');
    choice.addEventListener('click', () => choose(host, control, conversation.conversation_id));
    item.append(choice);
    list.append(item);
  }
  status.textContent = conversations.length ? '' : strings.empty;
  status.hidden = !!conversations.length;
  const first = list.querySelector('button');
  if (first && document.activeElement === title) first.focus();
}

/**
 * @param {PanelHost} host
 * @param {HTMLButtonElement} control
 * @param {boolean} refocus Focus goes back to the control.
 */
function close(host, control, refocus) {
  const view = /** @type {HTMLElement | null} */ (host.root.querySelector('#chat-conversations'));
  if (!view || view.hidden) return;
  view.hidden = true;
  host.root.classList.remove(OPEN_CLASS);
  control.setAttribute('aria-expanded', 'false');
  if (refocus) control.focus();
}

// The chosen conversation replaces the panel's: kept with no token of its own (the identity
// token is its Bearer, client.js), drawn from its history, its running answer resumed
// quietly where it is (chat.js restore). The answer this panel was following goes on on the
// server; here it is only dropped.
/**
 * @param {PanelHost} host
 * @param {HTMLButtonElement} control
 * @param {string} conversationId
 */
async function choose(host, control, conversationId) {
  close(host, control, false);
  host.input.focus();
  if (conversationId === host.client.conversationId) return;
  host.currentRun()?.drop();
  host.remember({ conversation_id: conversationId, token: '' });
  await host.redraw();
  host.scrollToEnd();
}
