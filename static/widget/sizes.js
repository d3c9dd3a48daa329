// A file's size in the reader's language (Intl.NumberFormat units, CLDR): decimal units, as
// the server's limits are set (10 MB = 10,000,000 B); bytes spelled out ("46 bytes"), larger
// units short ("2.1 MB"). Shared by the panel's attachments (attachments.js) and the agents'
// console (static/agent/console.js), so a visitor and an agent read a file's size alike.
/**
 * @param {number} bytes
 * @param {string} lang
 * @returns {string}
 */
export function formatSize(bytes, lang) {
  const [unit, scale] =
    bytes >= 1e6 ? ['megabyte', 1e6] : bytes >= 1e3 ? ['kilobyte', 1e3] : ['byte', 1];
  return new Intl.NumberFormat(lang, {
    style: 'unit',
    unit,
    unitDisplay: scale === 1 ? 'long' : 'short',
    maximumFractionDigits: 1,
  }).format(bytes / scale);
}
