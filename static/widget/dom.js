// The small helpers the panel's modules and the agents' console share, defined once here
// (tests/test_architecture.py): elements whose text is only ever textContent (docs/security.md:
// no model, user or agent text becomes markup), and a wait a signal can cut short. Part of the
// panel's first open (chat.js imports it): kept small (tests/test_budgets.py).

/**
 * The element a tag name makes: `element('button')` is an HTMLButtonElement.
 * @template {string} K
 * @typedef {K extends keyof HTMLElementTagNameMap ? HTMLElementTagNameMap[K] : HTMLElement}
 *   ElementOf
 */

/**
 * An element with a class and its text (textContent: never parsed as markup).
 * @template {string} K
 * @param {K} tag
 * @param {string} [className]
 * @param {string | null} [text]
 * @returns {ElementOf<K>}
 */
export function element(tag, className, text) {
  const node = /** @type {ElementOf<K>} */ (document.createElement(tag));
  if (className) node.className = className;
  if (text != null) node.textContent = text;
  return node;
}

/**
 * A button that is never a form's submit button.
 * @param {string} className
 * @param {string} [text]
 * @param {(event: MouseEvent) => void} [onClick]
 * @returns {HTMLButtonElement}
 */
export function button(className, text, onClick) {
  const node = element('button', className, text);
  node.type = 'button';
  if (onClick) node.addEventListener('click', onClick);
  return node;
}

/**
 * Wait `milliseconds`, or less if `signal` aborts (a wake-up).
 * @param {number} milliseconds
 * @param {AbortSignal} [signal]
 * @returns {Promise<void>}
 */
export function sleep(milliseconds, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, milliseconds);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

// A modal dialog over the panel, its live regions emptied first: what they hold was said
// already, and when the dialog closes and the panel stops being inert, Chromium exposes that
// text as new, which Orca says again (tests/e2e/test_orca_visitors.py).
/** @param {HTMLDialogElement} dialog */
export function showModal(dialog) {
  for (const region of document.querySelectorAll('[data-chat-announcer], [data-chat-alert]'))
    region.textContent = '';
  dialog.showModal();
}
