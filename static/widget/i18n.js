// UI strings are data: static/widget/i18n/<lang>.json, one file per
// language, read by the server to render the panel and embedded in the
// page for this code (no string lives in the UI code itself).
//
// A string that depends on a number is an object of CLDR plural categories
// ({"one": "{count} line", "other": "{count} lines"}), chosen with
// Intl.PluralRules for the panel's language, as GOV.UK Frontend's i18n does
// (https://cldr.unicode.org/index/cldr-spec/plural-rules). `other` is the
// fallback every language has.

/**
 * `template` with each `{name}` replaced by `values[name]` (unknown names stay).
 * @param {string} template
 * @param {Record<string, unknown>} [values]
 * @returns {string}
 */
export function format(template, values = {}) {
  return String(template).replace(/\{(\w+)\}/g, (_, key) =>
    key in values ? String(values[key]) : `{${key}}`,
  );
}

const pluralRulesByLanguage = new Map();

function pluralCategory(lang, count) {
  if (typeof Intl === 'undefined' || !Intl.PluralRules) return count === 1 ? 'one' : 'other';
  let rules = pluralRulesByLanguage.get(lang);
  if (!rules) {
    rules = new Intl.PluralRules(lang);
    pluralRulesByLanguage.set(lang, rules);
  }
  return rules.select(count);
}

/**
 * `forms`: a plural object, or a plain string (a language with one form).
 * @param {string | Record<string, string>} forms
 * @param {number} count
 * @param {string} lang
 * @returns {string}
 */
export function plural(forms, count, lang) {
  const template =
    typeof forms === 'string' ? forms : (forms[pluralCategory(lang, count)] ?? forms.other);
  return format(template, { count });
}

// The summaries the markdown view speaks for blocks that are not read out
// (code blocks, tables): one definition for the panel and the QA page's
// expected script.
/**
 * @param {Record<string, any>} strings The panel's strings.
 * @param {string} lang
 */
export function markdownSummaries(strings, lang) {
  return {
    codeBlock: (codeLanguage, lineCount) => {
      const lines = plural(strings.lines, lineCount, lang);
      return codeLanguage
        ? format(strings.codeBlock, { lang: codeLanguage, lines })
        : format(strings.codeBlockNoLang, { lines });
    },
    table: (columnCount, rowCount) =>
      format(strings.table, {
        columns: plural(strings.columns, columnCount, lang),
        rows: plural(strings.rows, rowCount, lang),
      }),
  };
}
