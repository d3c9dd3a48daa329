"""A private headless desktop with Orca listening, for one test module.

`OrcaDesktop(workdir).start()` starts, each in its own process group:

1. ``Xvfb`` on a free display (``-displayfd``: Xvfb picks the number);
2. a D-Bus session bus (``dbus-daemon --session``), whose address the
   browser and Orca are given; D-Bus activates the accessibility bus
   (at-spi-bus-launcher, its own dbus-daemon, at-spi2-registryd) on it;
3. ``org.a11y.Status`` ``IsEnabled`` and ``ScreenReaderEnabled`` set to
   true, which is how a desktop tells toolkits that a screen reader runs;
4. Orca, through ``launch_orca.py`` on Debian's ``/usr/bin/python3``, with
   its settings in a fresh folder and its debug output (line-buffered) in
   ``orca-debug.out``; it is ready once it has said "Screen reader on.".

What Orca would say is read back from the debug file: every
``SPEECH OUTPUT: '…'`` line (no synthesizer is needed, and none runs).

`raise_priority()` gives every process of the desktop, and the browser started on it, a
higher CPU priority than the rest of the test run. Orca processes events in order on one
thread, and can fall behind the page:

- a change it gets to late is read from the change itself, as the panel's polite region is
  not atomic (docs/accessibility.md A5); from an atomic region Orca would read the region's
  text as it is by then. Measured by stopping Orca (SIGSTOP to its process group) for 1.2 s
  right after a question, Orca alone with the test: atomic, the answer twice and the cue never
  in 7 of 8 attempts; not atomic, every announcement once in 16 of 16 (4 of them beside two
  busy loops). Not a test of the suite: on a full run's loaded cores the same stop puts Orca
  further behind, into the case below (one full run in four, both attempts).
- when two changes of one live region reach it together (behind by more than the
  announcer's one second; stopped for 2 s or more, it lost one), it skips the older
  ("SCRIPT: Skipping object event due to more recent ... event in the same object",
  orca/script.py `skipObjectEvent`) and that announcement goes unheard: seen in CI's full run on 2 cores
  (load average 8–12, three workers with browsers). A person's screen reader does not share
  two cores with two other test workers. `superseding()` names the announcements that made
  Orca skip one that way since the last `mark()`, so a failing test says whether Orca fell
  behind.

Everything gets its own ``XDG_RUNTIME_DIR``, ``XDG_*`` folders and a marker
variable in its environment, so two runs on one machine never share a bus
or a display. `stop()` SIGKILLs every process group it started, then any
process that still carries this desktop's marker (the accessibility bus and
registry that D-Bus activated, a speech-dispatcher Orca may have spawned):
Orca ignores SIGTERM inside its GLib loop, so nothing gentler is tried.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAUNCHER = HERE / "launch_orca.py"
SYSTEM_PYTHON = "/usr/bin/python3"  # Orca and pyatspi are Debian's, not the venv's
ORCA = "/usr/bin/orca"
AT_SPI_BUS_LAUNCHER = "/usr/libexec/at-spi-bus-launcher"

# What .ci/test installs for this (Debian package names).
DEBIAN_PACKAGES = "xvfb dbus-x11 orca speech-dispatcher python3-pyatspi at-spi2-core"

READY_SPEECH = "Screen reader on."
# What Orca logs when it drops an event because a newer one of its kind on the same object
# is already queued (orca/script.py, Script.skipObjectEvent).
BACKLOG_SKIP = "SCRIPT: Skipping object event due to more recent"
MARKER = "WIDGET_SERVER_ORCA_DESKTOP"

# `SPEECH OUTPUT: 'text'` then, when Orca logs it, the voice: `{...}` or
# ` voice=NAME{...}`. Text may itself contain quotes, so match up to the last
# quote before that tail.
_SPEECH_LINE = re.compile(r"^\d\d:\d\d:\d\d\.\d+ - SPEECH OUTPUT: '(?P<text>.*)'(?: voice=\w+)?(?:\{.*\})?\s*$")


class DesktopError(RuntimeError):
    pass


def missing_tools() -> list[str]:
    """The programs this needs that are not installed (empty when all are)."""
    missing = [name for name in ("Xvfb", "dbus-daemon", "dbus-send") if shutil.which(name) is None]
    for path in (ORCA, SYSTEM_PYTHON, AT_SPI_BUS_LAUNCHER):
        if not os.access(path, os.X_OK):
            missing.append(path)
    if os.access(SYSTEM_PYTHON, os.X_OK):
        probe = subprocess.run([SYSTEM_PYTHON, "-c", "import pyatspi, orca"], capture_output=True, timeout=30)
        if probe.returncode != 0:
            missing.append(f"{SYSTEM_PYTHON} modules pyatspi and orca")
    return missing


def parse_speech(text: str) -> list[str]:
    """The utterances in an Orca debug log, in order."""
    spoken = []
    for line in text.splitlines():
        match = _SPEECH_LINE.match(line)
        if match:
            spoken.append(match["text"])
    return spoken


class OrcaDesktop:
    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir)
        self.debug_file = self.workdir / "orca-debug.out"
        self.marker = uuid.uuid4().hex
        self.env: dict[str, str] = {}
        self._processes: list[subprocess.Popen] = []
        # The debug file grows by megabytes a run: read only what is new.
        self._spoken: list[str] = []
        self._read_bytes = 0
        self._partial = b""
        self._mark_offset = 0  # where in the debug file the last mark() was
        self._logs: list = []

    # -- start ------------------------------------------------------------

    def start(self, timeout: float = 20.0) -> OrcaDesktop:
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, timeout: float) -> None:
        runtime = self.workdir / "run"
        runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Nothing of the caller's desktop, if it has one: its display, buses, runtime folder.
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("DBUS_", "AT_SPI", "WAYLAND", "XDG_SESSION", "XDG_RUNTIME", "XDG_CURRENT"))
            and k != "DISPLAY"
        }
        env = {
            **base,
            MARKER: self.marker,
            "XDG_RUNTIME_DIR": str(runtime),
            "XDG_CONFIG_HOME": str(self.workdir / "config"),
            "XDG_DATA_HOME": str(self.workdir / "data"),
            "XDG_CACHE_HOME": str(self.workdir / "cache"),
            "XDG_SESSION_TYPE": "x11",
            "LANG": "C.UTF-8",
        }

        # 1. X display.
        read_end, write_end = os.pipe()
        xvfb = self._spawn(
            ["Xvfb", "-displayfd", str(write_end), "-screen", "0", "1280x1024x24", "-nolisten", "tcp", "-noreset"],
            env,
            pass_fds=(write_end,),
            stdout=subprocess.DEVNULL,
            stderr=self._log("xvfb.log"),
        )
        os.close(write_end)
        try:
            display = _read_line(read_end, timeout, "Xvfb to print its display number", xvfb)
        finally:
            os.close(read_end)
        env["DISPLAY"] = f":{display}"

        # 2. A session bus of our own (accessibility bus activated from it).
        bus = self._spawn(
            ["dbus-daemon", "--session", "--nofork", "--print-address=1"],
            env,
            stdout=subprocess.PIPE,
            stderr=self._log("dbus.log"),  # also what the services it activates print
        )
        env["DBUS_SESSION_BUS_ADDRESS"] = _read_line(bus.stdout.fileno(), timeout, "dbus-daemon's address", bus)
        self.env = env

        # 3. "A screen reader runs": toolkits turn their accessibility on.
        for prop in ("IsEnabled", "ScreenReaderEnabled"):
            subprocess.run(
                [
                    "dbus-send", "--session", "--print-reply", "--dest=org.a11y.Bus", "/org/a11y/bus",
                    "org.freedesktop.DBus.Properties.Set", "string:org.a11y.Status", f"string:{prop}",
                    "variant:boolean:true",
                ],
                env=env, check=True, capture_output=True, timeout=timeout,
            )  # fmt: skip

        # 4. Orca.
        orca = self._spawn(
            [
                SYSTEM_PYTHON,
                str(LAUNCHER),
                f"--debug-file={self.debug_file}",
                "--user-prefs",
                str(self.workdir / "orca-prefs"),
            ],
            env,
            stdout=self._log("orca-stdout.log"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while READY_SPEECH not in self.speech():
            if orca.poll() is not None:
                raise DesktopError(f"Orca exited ({orca.returncode}) before it was ready; see {self.workdir}")
            if time.monotonic() > deadline:
                raise DesktopError(f"Orca did not say {READY_SPEECH!r} within {timeout} s; see {self.debug_file}")
            time.sleep(0.05)

    def _log(self, name: str):
        # Kept open for the child processes' whole life; stop() closes it.
        log = open(self.workdir / name, "wb")  # noqa: SIM115
        self._logs.append(log)
        return log

    def _spawn(self, argv: list[str], env: dict[str, str], **kwargs) -> subprocess.Popen:
        process = subprocess.Popen(argv, env=env, start_new_session=True, stdin=subprocess.DEVNULL, **kwargs)
        self._processes.append(process)
        return process

    # -- what Orca said ---------------------------------------------------

    def speech(self) -> list[str]:
        """Everything Orca has said so far, one utterance per item."""
        try:
            with open(self.debug_file, "rb") as f:
                f.seek(self._read_bytes)
                data = f.read()
        except FileNotFoundError:
            return []
        self._read_bytes += len(data)
        data = self._partial + data
        complete, _, self._partial = data.rpartition(b"\n")  # a line still being written waits
        if complete:
            self._spoken.extend(parse_speech(complete.decode("utf-8", errors="replace")))
        return list(self._spoken)

    def mark(self) -> int:
        """A position in `speech()`: pass it to `speech_since` later."""
        spoken = len(self.speech())
        self._mark_offset = self._read_bytes
        return spoken

    def superseding(self, texts: list[str]) -> list[str]:
        """Those of `texts` (what the live regions were given) that made Orca skip the
        region's previous insertion since the last `mark()`, because it was still queued
        when this newer one arrived: Orca was behind (module docstring). Orca's log names
        the newer event on the line after the skip."""
        with open(self.debug_file, "rb") as f:
            f.seek(self._mark_offset)
            log = f.read().decode("utf-8", errors="replace")
        newer_events = [block.split("\n", 2)[1] for block in log.split(BACKLOG_SKIP)[1:] if block.count("\n") >= 2]
        inserts = [line for line in newer_events if "object:text-changed:insert" in line]
        return [text for text in texts if any(text[:40] in line for line in inserts)]

    def raise_priority(self, niceness: int = -10) -> list[int]:
        """Renice every thread of every process of this desktop (the browser launched with
        its `env` included) to `niceness`; returns the pids that could not be (not root)."""
        refused = []
        for pid in self.stragglers():
            try:
                threads = [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
            except OSError:
                continue  # it just exited
            for tid in threads:  # Linux nice values are per thread
                try:
                    os.setpriority(os.PRIO_PROCESS, tid, niceness)
                except ProcessLookupError:
                    pass
                except PermissionError:
                    refused.append(pid)
                    break
        return refused

    def speech_since(self, mark: int) -> list[str]:
        return self.speech()[mark:]

    def wait_for_speech(self, text: str, *, since: int, timeout: float = 15.0) -> list[str]:
        """Wait until Orca has said exactly `text` after `since` (a `mark()`); return what it
        said since. No default: the desktop lives for a module, so speech from an earlier test
        (or an earlier attempt of the same one, rerun) would match at once."""
        deadline = time.monotonic() + timeout
        while True:
            said = self.speech_since(since)
            if text in said:
                return said
            if time.monotonic() > deadline:
                raise AssertionError(f"Orca did not say {text!r} within {timeout} s; it said: {said!r}")
            time.sleep(0.1)

    def wait_for_silence(self, seconds: float, *, since: int, timeout: float = 15.0) -> list[str]:
        """Wait until Orca has said nothing new for `seconds`; return what it said since `since`."""
        deadline = time.monotonic() + timeout
        said = self.speech_since(since)
        quiet_from = time.monotonic()
        while time.monotonic() - quiet_from < seconds:
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
            now = self.speech_since(since)
            if now != said:
                said, quiet_from = now, time.monotonic()
        return said

    def wait_until_idle(self, quiet: float = 0.5, *, timeout: float = 15.0) -> float:
        """Wait until Orca has processed every event it was sent: its debug
        file (a line or more for each event) has not grown for `quiet`
        seconds. Returns how long that took.

        Speech falling silent is not enough: after a page load Orca can still
        be working through a backlog of events, and when it finally reaches
        two changes of one live region queued together it skips the older
        ("Skipping object event due to more recent system event in the same
        object") — the first announcement would go unheard."""
        started = time.monotonic()
        size = -1
        quiet_from = started
        while True:
            try:
                now = self.debug_file.stat().st_size
            except FileNotFoundError:
                now = 0
            if now != size:
                size, quiet_from = now, time.monotonic()
            elif time.monotonic() - quiet_from >= quiet:
                return time.monotonic() - started
            if time.monotonic() - started > timeout:
                raise AssertionError(f"Orca was still busy after {timeout} s (its debug file kept growing)")
            time.sleep(0.05)

    # -- stop -------------------------------------------------------------

    def stop(self) -> None:
        for process in reversed(self._processes):
            if process.poll() is None:  # not reaped: its pid (= its group's id) is still ours
                _kill_group(process.pid)
        for process in self._processes:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            if process.stdout:
                process.stdout.close()
        self._processes.clear()
        # Whatever D-Bus activated or Orca spawned left our process groups
        # (at-spi-bus-launcher, its bus, the registry, speech-dispatcher):
        # it still carries our marker.
        for _ in range(3):
            stragglers = self.stragglers()
            if not stragglers:
                break
            for pid in stragglers:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.1)
        for log in self._logs:
            log.close()
        self._logs.clear()

    def stragglers(self) -> list[int]:
        """Processes still alive that were started for this desktop."""
        if not self.marker:
            return []
        needle = f"{MARKER}={self.marker}".encode()
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    environ = f.read().split(b"\0")
            except OSError:
                continue
            if needle in environ and not _is_zombie(int(entry)):
                found.append(int(entry))
        return found


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return True


def _read_line(fd: int, timeout: float, what: str, process: subprocess.Popen) -> str:
    data = b""
    deadline = time.monotonic() + timeout
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            raise DesktopError(f"timed out waiting for {what}")
        ready, _, _ = select.select([fd], [], [], min(left, 0.2))
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                raise DesktopError(f"{what}: the process closed its output (exit status {process.poll()})")
            data += chunk
        elif process.poll() is not None:
            raise DesktopError(f"{what}: the process exited with status {process.returncode}")
    return data.decode().strip()
