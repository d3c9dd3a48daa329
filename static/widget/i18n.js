// UI strings are data: static/widget/i18n/<lang>.json, one file per
// language, read by the server to render the panel and embedded in the
// page for this code (no string lives in the UI code itself).

export function format(template, values = {}) {
  return String(template).replace(/\{(\w+)\}/g, (_, key) =>
    key in values ? String(values[key]) : `{${key}}`,
  );
}
