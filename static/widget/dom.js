// The small helpers the panel's modules and the agents' console share, defined once here
// (tests/test_architecture.py): elements whose text is only ever textContent (docs/security.md:
// no model, user or agent text becomes markup), and a wait a signal can cut short. Part of the
// panel's first open (chat.js imports it): kept small (tests/test_budgets.py).

// An element with a class and its text (textContent: never parsed as markup).
export function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text != null) node.textContent = text;
  return node;
}

// A button that is never a form's submit button.
export function button(className, text, onClick) {
  const node = element('button', className, text);
  node.type = 'button';
  if (onClick) node.addEventListener('click', onClick);
  return node;
}

// Wait `milliseconds`, or less if `signal` aborts (a wake-up).
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
