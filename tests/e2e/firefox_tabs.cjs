// Loaded into Playwright's driver (Node.js) by tests/conftest.py through NODE_OPTIONS=--require,
// for the test run only: a page Playwright opens in headless Firefox ESR becomes a tab of the
// window already open instead of a new window, when no other page of the run is open.
//
// Why: through WebDriver BiDi, Playwright opens every page as `browsingContext.create` with
// type "window" (the W3C WebDriver BiDi spec, browsingContext.create), and a new Firefox window
// loads the whole browser front end: about 0.4 CPU-seconds each on these machines, against a
// tenth of that for a tab (docs/performance.md, "The test suite", has the measurement). A test
// opens one page, so a tab is as visible and focused as a window would be. A second page opened
// while one is open still gets a window of its own: a background tab would be hidden
// (document.visibilityState) and throttled, which the widget reacts to. Headed browsers (the
// Orca tests) keep windows: Orca follows the active window.
//
// The text replaced is Playwright's own (bidiBrowser.ts, doCreateNewPage), in the bundle of the
// version pyproject.toml pins; tests/test_firefox_tabs.py fails when it no longer matches, and
// until then the hook changes nothing (every page a window, as before).
'use strict';

const Module = require('node:module');
const path = require('node:path');

const WINDOW = 'type: BrowsingContext.CreateType.Window,\n          userContext: this._browserContextId';
const TAB_WHEN_ALONE =
  'type: this._browser.options.headful || this._browser._bidiPages.size ? ' +
  'BrowsingContext.CreateType.Window : BrowsingContext.CreateType.Tab,\n' +
  '          userContext: this._browserContextId';

function withTabs(source) {
  return source.split(WINDOW).length === 2 ? source.replace(WINDOW, TAB_WHEN_ALONE) : source;
}

const compile = Module.prototype._compile;
Module.prototype._compile = function compileWithTabs(content, filename) {
  const source = path.basename(filename) === 'coreBundle.js' ? withTabs(content) : content;
  return compile.call(this, source, filename);
};

module.exports = { withTabs, WINDOW, TAB_WHEN_ALONE };
