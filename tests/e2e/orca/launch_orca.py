"""Run Debian's Orca (/usr/bin/orca) for a test: `/usr/bin/python3 launch_orca.py ORCA-ARGS…`.

Orca is a Python program for Debian's own python3 (not the project's venv).
This launcher runs its script with runpy and changes two things before its
main() starts:

- the debug file (``--debug-file``) is opened line-buffered, so every
  ``SPEECH OUTPUT: '…'`` line is on disk at once — Orca ignores SIGTERM in
  its GLib loop and must be stopped with SIGKILL, which would lose the tail
  of a block-buffered file;
- "other Orcas" are not looked for: Orca refuses to start (or, with
  --replace, SIGKILLs them) when the same user runs another Orca anywhere on
  the machine, but each test's Orca has its own X display and D-Bus session
  and cannot disturb another.

It also turns off the speech on page load (say-all, page summary), which
would otherwise read the host page while a test runs, and has live regions
presented even when Orca doubts that their tab is active (see below).
"""

import builtins
import functools
import runpy
import sys

ORCA = "/usr/bin/orca"

# sys.path[0] is this folder: keep it from shadowing anything of Orca's.
del sys.path[0]

orca_script = runpy.run_path(ORCA, run_name="orca_under_test")
main = orca_script["main"]
namespace = main.__globals__  # the globals main() runs with
namespace["open"] = functools.partial(builtins.open, buffering=1, encoding="utf-8")
namespace["otherOrcas"] = list

# orca.settings: what the settings manager answers for a setting no profile
# sets (none of these three is a profile setting; the web script fills the
# first two in only when they are unset).
settings = namespace["settings"]
settings.sayAllOnLoad = False
settings.pageSummaryOnLoad = False
# Orca speaks a live region only in what it takes for the active tab, and
# without a window manager it sometimes gets that wrong after a navigation
# ("WEB: Live region source is not in active tab." — every announcement of
# the page lost, about one page load in fifteen). The test's page is the
# browser's only tab: present live regions whatever Orca thinks.
settings.presentLiveRegionFromInactiveTab = True

sys.argv = [ORCA, *sys.argv[1:]]
sys.exit(main())
