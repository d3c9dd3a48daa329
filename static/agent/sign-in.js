// The sign-in page's one behaviour: a refused sign-in starts at its error summary
// (templates/agent_sign_in.html), focused so a screen reader reads it first and a keyboard
// user continues from it to the fields (GOV.UK Frontend's error summary does the same).
// docs/accessibility.md A46.

const summary = /** @type {HTMLElement | null} */ (document.querySelector('[data-error-summary]'));
if (summary) summary.focus();
