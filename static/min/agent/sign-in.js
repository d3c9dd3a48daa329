const r=document.querySelector("[data-error-summary]");r&&r.focus();
