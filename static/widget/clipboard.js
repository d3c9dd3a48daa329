// Writing text to the clipboard, shared by the lazily loaded parts that copy (answer-tools.js:
// a whole answer; code-blocks.js: one code block). Never part of the panel's first open.

/**
 * The Clipboard API first; where the frame may not use it (a cross-origin iframe without
 * `allow="clipboard-write"` in Chromium) the copy command, still within the click's user
 * activation, with the text set on the copy event: no selection, no focus move
 * (https://w3c.github.io/clipboard-apis/).
 * @param {string} text
 * @returns {Promise<boolean>} whether the text was written
 */
export async function writeClipboard(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    let written = false;
    /** @param {ClipboardEvent} event */
    const onCopy = (event) => {
      event.clipboardData.setData('text/plain', text);
      event.preventDefault();
      written = true;
    };
    document.addEventListener('copy', onCopy);
    try {
      document.execCommand('copy');
    } catch {
      /* unsupported: written stays false */
    } finally {
      document.removeEventListener('copy', onCopy);
    }
    return written;
  }
}
