// An answer's sources (docs/accessibility.md A111–A113; docs/protocol.md, "Sources"): a
// "Sources (2)" disclosure under the answer — a real button with aria-expanded over a list,
// closed at first — and each inline marker of the text ("[1]") made a link to its source in
// that list. Said once, after the answer's completion cue ("2 sources"), through the panel's
// one Announcer, never inside its sentences; a restored answer's sources are drawn, not said.
//
// Loaded by chat.js only when a completed answer lists sources: never part of the panel's
// first open (tests/test_budgets.py). Every text here is textContent and every link's address
// passes `safeHref` (http and https only): a source is a backend's data, never markup
// (docs/security.md, "Links in answers").

import { button, element } from './dom.js';
import { format, plural } from './i18n.js';
import { lazyStrings, linkStylesheet } from './lazy-parts.js';

/** @typedef {import('./host.js').PanelHost} PanelHost */
/** @typedef {import('./host.js').AssistantTurn} AssistantTurn */
/** @typedef {import('./model.js').Source} Source */

const stylesheet = linkStylesheet(new URL('./sources.css', import.meta.url).href);

// An inline marker: `[id]`, the id as the backend gave it (no spaces or brackets inside).
const MARKER = /\[([^[\]\s]{1,64})\]/g;

let lists = 0; // each list's element id is unique in the panel

/**
 * The address a source's link may have: an absolute http(s) URL, else null (no link).
 * @param {string | undefined} url
 * @returns {string | null}
 */
export function safeHref(url) {
  if (typeof url !== 'string') return null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : null;
  } catch {
    return null;
  }
}

/**
 * One source as a list item: its marker, its title (a link opening in a new tab when it has a
 * safe address) and the passage used.
 * @param {Source} source
 * @param {string} id
 * @param {Record<string, any>} strings
 */
function sourceItem(source, id, strings) {
  const item = element('li', 'sources__item');
  item.id = id;
  item.tabIndex = -1; // a marker's link moves focus here
  const href = safeHref(source.url);
  let title;
  if (href) {
    title = element('a', 'sources__link', source.title);
    title.href = href;
    title.target = '_blank';
    title.rel = 'noopener noreferrer';
    title.append(element('span', 'visually-hidden', ` ${strings.newTab}`));
  } else {
    title = element('span', 'sources__title', source.title);
  }
  item.append(element('span', 'sources__id', `[${source.id}]`), ' ', title);
  if (source.snippet) item.append(element('p', 'sources__snippet', source.snippet));
  return item;
}

/**
 * The text nodes of the answer outside code and links: where markers may be.
 * @param {HTMLElement} body
 * @returns {Text[]}
 */
function proseTextNodes(body) {
  const walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) =>
      node.parentElement?.closest('code, pre, a')
        ? NodeFilter.FILTER_REJECT
        : NodeFilter.FILTER_ACCEPT,
  });
  const nodes = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode())
    nodes.push(/** @type {Text} */ (node));
  return nodes;
}

/**
 * Each `[id]` of a listed source, in the answer's prose, becomes a link to it; the text stays
 * exactly as it was (the link's text is the marker), so what was read and copied is unchanged.
 * @param {HTMLElement} body
 * @param {Map<string, { item: HTMLElement, title: string }>} byId
 * @param {Record<string, any>} strings
 * @param {() => void} open
 */
function linkMarkers(body, byId, strings, open) {
  for (const node of proseTextNodes(body)) {
    const text = node.data;
    const parts = [];
    let last = 0;
    for (const match of text.matchAll(MARKER)) {
      const cited = byId.get(match[1]);
      if (!cited) continue;
      parts.push(text.slice(last, match.index));
      const link = element('a', 'sources__marker', match[0]);
      link.href = `#${cited.item.id}`;
      link.setAttribute('aria-label', format(strings.marker, { id: match[1], title: cited.title }));
      link.addEventListener('click', (event) => {
        event.preventDefault(); // no navigation in the panel's frame: open the list, go there
        open();
        cited.item.focus();
      });
      parts.push(link);
      last = match.index + match[0].length;
    }
    if (!parts.length) continue;
    parts.push(text.slice(last));
    node.replaceWith(...parts.filter((part) => part !== ''));
  }
}

/**
 * Draw a completed answer's sources under it, once; `announce`: say their count (a live
 * answer, not a restored one).
 * @param {PanelHost} host
 * @param {AssistantTurn} turn
 * @param {Source[]} sources
 * @param {{ announce?: boolean }} [options]
 */
export async function showSources(host, turn, sources, { announce = false } = {}) {
  const [strings] = await Promise.all([lazyStrings(host, 'sources'), stylesheet]);
  const listed = sources.filter((source) => source?.id && source.title);
  if (!strings || !listed.length || turn.item.querySelector('.sources')) return;
  const listId = `sources-${++lists}`;
  const list = element('ol', 'sources__list');
  list.id = listId;
  list.hidden = true;
  /** @type {Map<string, { item: HTMLElement, title: string }>} */
  const byId = new Map();
  listed.forEach((source, index) => {
    const item = sourceItem(source, `${listId}-${index + 1}`, strings);
    byId.set(source.id, { item, title: source.title });
    list.append(item);
  });
  const toggle = button(
    'button button--secondary sources__toggle',
    format(strings.toggle, { count: listed.length }),
    () => setOpen(toggle.getAttribute('aria-expanded') !== 'true'),
  );
  toggle.setAttribute('aria-expanded', 'false');
  toggle.setAttribute('aria-controls', listId);
  /** @param {boolean} open */
  const setOpen = (open) => {
    toggle.setAttribute('aria-expanded', String(open));
    list.hidden = !open;
  };
  const box = element('div', 'sources');
  box.append(toggle, list);
  turn.body.after(box);
  linkMarkers(turn.body, byId, strings, () => setOpen(true));
  if (announce) host.announcer.cue(plural(strings.count, listed.length, host.config.lang));
}
