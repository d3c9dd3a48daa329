// What scrolls in the transcript, and following its end (docs/accessibility.md A37, A38, A40).
// Loaded by chat.js once the panel is ready, outside the first open's bytes (tests/test_budgets.py).
//
// Following: whatever grows the transcript (text, a status, Retry, an action card, an answer's
// tools) or shrinks its view keeps the end in view while the reader follows it. A ResizeObserver
// sees every such change, wherever it comes from, so no end state is left below the fold (issue
// 12: a refusal at once below a long answer kept its Retry button out of view). Following stops
// only when the reader scrolls up (our own scrolls only go down) and resumes at the bottom or on
// a send (the host's scrollToEnd, host.js).
//
// Tab stops: the transcript, a code block and a table's box (markdown.js, data-label) are tab
// stops exactly while they scroll, so keyboard users can scroll them then and nothing that
// scrolls nothing is a stop. IBM Equal Access (element_tabbable_role_valid) flags a tab stop
// without a widget role that does not scroll; axe (scrollable-region-focusable) asks for one
// once it does. A table's box is also a region named by the table's summary while it scrolls.

// Both engines count an overflow no larger than the element's own padding as no scrolling.
// The transcript's vertical padding and a code block's sideways padding are 6 px a side
// (panel.css), so 12 px: within it neither engine asks for a stop, past it both agree.
const SCROLL_SLACK_PX = 12;

/** @typedef {import('./host.js').PanelHost} PanelHost */

/** @param {HTMLElement} box */
export function markScrollable(box) {
  const scrolls =
    Math.max(box.scrollHeight - box.clientHeight, box.scrollWidth - box.clientWidth) >
    SCROLL_SLACK_PX;
  const set = (name, value) =>
    scrolls ? box.setAttribute(name, value) : box.removeAttribute(name);
  set('tabindex', 0);
  if (box.dataset.label) {
    set('role', 'region');
    set('aria-label', box.dataset.label);
  }
}

/** @param {PanelHost} host */
export function init(host) {
  const scroller = host.scroller;
  let lastTop = scroller.scrollTop;
  host.following = true;
  scroller.addEventListener('scroll', () => {
    const top = scroller.scrollTop;
    host.following = (host.following && top >= lastTop) || host.atBottom();
    lastTop = top;
  });
  const observer = new ResizeObserver(() => {
    for (const box of [
      scroller,
      .../** @type {NodeListOf<HTMLElement>} */ (
        host.transcript.querySelectorAll('pre, [data-label]')
      ),
    ])
      markScrollable(box);
    if (!host.following) return;
    host.scrollToEnd();
    // A control the reader is using in the transcript stays in view (WCAG 2.2 2.4.11 Focus
    // Not Obscured): on a short screen the comment field that Helpful opens would otherwise
    // push Helpful itself out of view (tests/e2e/test_short_screens.py).
    const focused = document.activeElement;
    if (focused !== scroller && scroller.contains(focused))
      focused.scrollIntoView({ block: 'nearest' });
  });
  observer.observe(scroller);
  observer.observe(host.transcript);
}
