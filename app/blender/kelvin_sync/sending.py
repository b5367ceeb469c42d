"""Sending a scene to Kelvin without ever holding Blender up (runs inside Blender's Python; only
the standard library, no ``bpy``: only Blender's main thread may touch Blender's data, so the add-on
reads the scene there, and this module sends the JSON it made from a background thread).

One send at a time: a save that comes while a send is under way waits as the *next* send (a newer
one replaces it — only the latest scene matters), and goes when the one before has finished. The
state (:class:`Status`) is read by the panel in Render Properties: sent, sending, waiting, or failed
and why, in one line.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

SEND_TIMEOUT_S = 120  # Kelvin may wait for another Kelvin's write (an import) before it takes this one
_HERE = os.path.dirname(os.path.abspath(__file__))
COMMAND_FILE = os.path.join(_HERE, "kelvin_command.json")  # written by `kelvin scene addon`

run = subprocess.run  # how the command is run (a test makes it wait on an event to see that nothing waits for it)


def made_by() -> str:
    """The kelvin command of the Kelvin that wrote this add-on (``kelvin scene addon``), or
    "kelvin" (found on the PATH)."""
    try:
        with open(COMMAND_FILE, encoding="utf-8") as fh:
            said = json.load(fh).get("kelvin")
        return said if isinstance(said, str) and said.strip() else "kelvin"
    except (OSError, ValueError, AttributeError):
        return "kelvin"


def command_for(kelvin: str, project: str) -> list[str]:
    """The command that takes the scene on stdin."""
    exe = shutil.which(kelvin) or kelvin
    return [exe] + (["--project", project] if project else []) + ["scene", "import", "-", "--json"]


def deliver(payload: bytes, command: list[str], scene_name: str) -> tuple[bool, str]:
    """Run the kelvin command with the scene on stdin (in the background): (ok, what Kelvin said)."""
    try:
        done = run(command, input=payload, capture_output=True, timeout=SEND_TIMEOUT_S,
                   creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0))
    except FileNotFoundError:
        return False, (f"the kelvin command was not found ({command[0]!r}); set its path in the add-on's "
                       "preferences")
    except PermissionError:
        return False, f"the kelvin command cannot be run ({command[0]!r} is not a program)"
    except subprocess.TimeoutExpired:
        return False, f"Kelvin did not answer within {SEND_TIMEOUT_S} s"
    except OSError as exc:
        return False, f"the kelvin command could not be started ({exc.strerror or exc})"
    if done.returncode != 0:
        said = (done.stderr or b"").decode("utf-8", "replace").strip().splitlines()
        last = said[-1] if said else f"kelvin exited with {done.returncode}"
        return False, last[len("kelvin: "):] if last.startswith("kelvin: ") else last
    try:
        reply = json.loads(done.stdout.decode("utf-8"))
        diffs = len(reply.get("differences") or [])
        return True, (f"{reply.get('settings', 0)} settings of {scene_name} sent"
                      + (f"; {diffs} differ from what was decided" if diffs else ""))
    except (ValueError, AttributeError):
        return True, f"{scene_name} sent"


@dataclass(frozen=True)
class Status:
    state: str  # "idle" | "sending" | "sent" | "failed"
    said: str = ""  # what Kelvin said (sent), or why it failed
    at: float = 0.0  # when it was said (time.time())
    waiting: bool = False  # a newer scene waits to go once this send is done

    def line(self) -> str:
        """The panel's status line."""
        if self.state == "idle":
            return "Not sent yet"
        if self.state == "sending":
            return "Sending to Kelvin …" + (" (a newer save waits)" if self.waiting else "")
        clock = time.strftime("%H:%M:%S", time.localtime(self.at))
        return f"{'Sent' if self.state == 'sent' else 'Failed'} at {clock}: {self.said}"


class Sender:
    """Sends in a background thread; :meth:`send` returns at once."""

    def __init__(self):
        self._lock = threading.Lock()
        self._status = Status("idle")
        self._next: tuple[bytes, list[str], str] | None = None
        self._thread: threading.Thread | None = None
        self.done = threading.Event()  # set whenever no send is under way (tests and benchmarks wait on it)
        self.done.set()

    @property
    def status(self) -> Status:
        with self._lock:
            return self._status

    def busy(self) -> bool:
        with self._lock:
            return self._thread is not None

    def send(self, payload: bytes, command: list[str], scene_name: str) -> None:
        """Send this scene (already read on the main thread) in the background."""
        with self._lock:
            if self._thread is not None:
                self._next = (payload, command, scene_name)
                self._status = Status("sending", self._status.said, self._status.at, waiting=True)
                return
            self.done.clear()
            self._status = Status("sending", self._status.said, self._status.at)
            self._thread = threading.Thread(target=self._run, args=(payload, command, scene_name),
                                            name="kelvin-send", daemon=True)
            self._thread.start()

    def _run(self, payload: bytes, command: list[str], scene_name: str) -> None:
        while True:
            try:
                ok, said = deliver(payload, command, scene_name)
            except Exception as exc:  # noqa: BLE001 — never let a send die silently
                ok, said = False, f"sending failed ({exc})"
            with self._lock:
                if self._next is not None:
                    payload, command, scene_name = self._next
                    self._next = None
                    self._status = Status("sending", said, time.time())
                    continue
                self._status = Status("sent" if ok else "failed", said, time.time())
                self._thread = None
                self.done.set()
                return


def log(text: str) -> None:
    """A line in Blender's console (the artist's terminal), for failures the panel also shows."""
    print(f"Kelvin: {text}", file=sys.stderr)
