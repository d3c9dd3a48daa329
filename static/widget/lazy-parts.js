// What every lazily loaded part of the panel (answer-tools.js, code-blocks.js,
// conversation-tools.js, outbox.js, tab-sync.js, handoff.js, attachments.js, refusals.js) needs to arrive: its strings
// and its stylesheet. Imported by those modules only, never by chat.js; the parts loaded once
// the panel is ready bring it into every first open (tests/test_budgets.py).

import { staticJson } from './client.js';

/** @typedef {import('./host.js').PanelHost} PanelHost */

// The UI strings of the panel's language, fetched once for every lazy part together: the
// groups web.py leaves out of the panel's config (LAZY_STRING_GROUPS) come from the same
// static/widget/i18n/<lang>.json the server reads (docs/accessibility.md A3). A failed
// fetch (offline) is forgotten, so the next use tries again. `folder`: a group too big to ride
// in that file, fetched on every first open (tests/test_budgets.py), has its own file per
// language, e.g. i18n/refusals/<lang>.json (refusals.js).
const filesOfStrings = new Map();

// Resolves to the group's strings, or null when they cannot be had right now.
/**
 * @param {PanelHost} host
 * @param {string} group
 * @param {string} [folder]
 * @returns {Promise<Record<string, any> | null>}
 */
export function lazyStrings(host, group, folder = '') {
  if (host.strings[group]) return Promise.resolve(host.strings[group]);
  const url = new URL(`./i18n/${folder}${host.config.lang}.json`, import.meta.url).href;
  if (!filesOfStrings.has(url))
    filesOfStrings.set(
      url,
      staticJson(url).catch(() => {
        filesOfStrings.delete(url);
        return {};
      }),
    );
  return filesOfStrings.get(url).then((all) => all[group] || null);
}

// A part's own stylesheet (the panel's CSP allows same-origin stylesheets, never inline
// styles), linked once. Resolves when it applies, or failed: a part draws its elements only
// then, so they never show unstyled for a frame, and still work without it.
const stylesheets = new Map();
/**
 * @param {string} href
 * @returns {Promise<unknown>}
 */
export function linkStylesheet(href) {
  if (!stylesheets.has(href))
    stylesheets.set(
      href,
      new Promise((resolve) => {
        const link = document.createElement('link');
        link.rel = 'stylesheet';
        link.href = href;
        link.addEventListener('load', resolve);
        link.addEventListener('error', resolve);
        document.head.append(link);
      }),
    );
  return stylesheets.get(href);
}
