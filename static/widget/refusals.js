// Why the server refused, said in the visitor's language (docs/accessibility.md, "Refusals in
// the visitor's language", A89–A90). An error's `code` is the contract; its
// `message` is English, for logs and API clients (docs/protocol.md, "Errors"). Imported on
// first use only, by every place that shows a refusal: never by the first open.
//
// The sentence, first found wins:
// 1. i18n/refusals/<lang>.json, one text per error code the server can send a visitor
//    (tests/test_refusal_strings.py keeps it complete), fetched on the first refusal;
// 2. the code's own text already in the panel's strings (`busy`, `rateLimited`, `errors.*`),
//    for when that file cannot be fetched (offline);
// 3. an English panel only: the server's own sentence, for a code newer than these files;
// 4. a general text of the panel's, chosen by the kind of failure: never English in a
//    panel of another language.
// A text whose number the error does not carry (a rate limit without Retry-After) is
// skipped rather than shown with a hole in it.

import { format, plural } from './i18n.js';
import { lazyStrings } from './lazy-parts.js';
import { ERROR } from './protocol.js';

/** @typedef {import('./host.js').PanelHost} PanelHost */

/**
 * @param {PanelHost} host
 * @param {import('./client.js').ApiError} error
 * @returns {Promise<string>}
 */
export async function reasonFor(host, error) {
  const strings = host.strings;
  const errors = strings.errors;
  const lang = host.config.lang;
  const code = error?.code || '';
  /** @type {Record<string, string>} */
  const values = {};
  if (error?.retryAfter > 0) values.seconds = plural(strings.seconds, error.retryAfter, lang);
  const panelTexts = {
    [ERROR.TOO_MANY_RUNNING.code]: strings.busy,
    [ERROR.RATE_LIMITED.code]: strings.rateLimited,
    [ERROR.STORE_UNAVAILABLE.code]: errors.unavailable,
    [ERROR.SERVER_BUSY.code]: errors.unavailable,
  };
  const refusals = code ? await lazyStrings(host, 'refusals', 'refusals/') : null;
  for (const template of [refusals?.[code], panelTexts[code], errors[code]]) {
    const holes = template?.match(/\{\w+\}/g) || [];
    if (template && holes.every((hole) => hole.slice(1, -1) in values))
      return format(template, values);
  }
  const status = error?.status || 0;
  if (lang === 'en' && status && error.message) return error.message;
  // No status: the request never got an answer (offline, connection cut).
  if (!status) return errors.network;
  return status >= 500 || status === 429 ? errors.unavailable : errors.validation;
}
