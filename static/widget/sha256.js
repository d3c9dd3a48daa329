// SHA-256 of bytes as lowercase hex, to check an answer against its
// completed event (docs/design.md, "Reconnection without duplicated text").
// Web Crypto where it exists (secure contexts); elsewhere sha256-fallback.js,
// fetched only then, so it costs nothing on the first open of a chat served
// over https (tests/test_budgets.py).

/**
 * @param {Uint8Array<ArrayBuffer>} bytes
 * @returns {Promise<string>}
 */
export async function sha256Hex(bytes) {
  const subtle = globalThis.crypto?.subtle;
  if (!subtle) {
    const { sha256HexSync } = await import('./sha256-fallback.js');
    return sha256HexSync(bytes);
  }
  const digest = new Uint8Array(await subtle.digest('SHA-256', bytes));
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, '0')).join('');
}
