"""Kelvin: send render settings — a Blender add-on.

A "Send to Kelvin" button in Render Properties, and an optional "Keep Kelvin in sync" switch that
sends the same whenever the file is saved or a render finishes. It reads the scene with
``scene_reader.collect`` and hands the JSON to the ``kelvin`` command on stdin (``kelvin --project P
scene import -``): no network port is opened, so neither other users nor web pages can send
anything to Kelvin through it. Install: ``kelvin scene addon`` writes the zip; Blender → Edit →
Preferences → Add-ons → Install from Disk.
"""
from __future__ import annotations

import json
import shutil
import subprocess

import bpy
from bpy.app.handlers import persistent

from . import scene_reader

bl_info = {
    "name": "Kelvin: send render settings",
    "author": "Kelvin",
    "version": (1, 0, 0),
    "blender": (4, 2, 0),
    "location": "Properties → Render → Kelvin",
    "description": "Sends the scene's render settings to Kelvin's settings ledger (through the kelvin command)",
    "category": "Render",
}

SEND_TIMEOUT_S = 60


def _prefs():
    addon = bpy.context.preferences.addons.get(__package__)
    return addon.preferences if addon is not None else None


def command_for(kelvin: str, project: str) -> list[str]:
    """The command that takes the scene on stdin."""
    exe = shutil.which(kelvin) or kelvin
    return [exe] + (["--project", project] if project else []) + ["scene", "import", "-", "--json"]


def send(scene, kelvin: str = "kelvin", project: str = "", run=subprocess.run) -> tuple[bool, str]:
    """Send the scene's settings to Kelvin: (ok, what Kelvin said, in one line)."""
    payload = json.dumps(scene_reader.collect(scene)).encode("utf-8")
    try:
        done = run(command_for(kelvin, project), input=payload, capture_output=True, timeout=SEND_TIMEOUT_S)
    except FileNotFoundError:
        return False, f"the kelvin command was not found ({kelvin!r}); set its path in the add-on's preferences"
    except subprocess.TimeoutExpired:
        return False, f"Kelvin did not answer within {SEND_TIMEOUT_S} s"
    if done.returncode != 0:
        said = (done.stderr or b"").decode("utf-8", "replace").strip().splitlines()
        return False, said[-1] if said else f"kelvin exited with {done.returncode}"
    try:
        reply = json.loads(done.stdout.decode("utf-8"))
        diffs = len(reply.get("differences") or [])
        return True, (f"Kelvin has {reply.get('settings', 0)} settings from {scene.name}"
                      + (f"; {diffs} differ from what was decided" if diffs else ""))
    except ValueError:
        return True, "sent to Kelvin"


class KelvinPreferences(bpy.types.AddonPreferences):
    bl_idname = __package__

    kelvin: bpy.props.StringProperty(name="kelvin command", default="kelvin",
                                     description="The kelvin command (its full path if it is not on the PATH)")
    project: bpy.props.StringProperty(name="Project", default="",
                                      description="Kelvin project to send to (empty: Kelvin's current project)")
    keep_in_sync: bpy.props.BoolProperty(name="Keep Kelvin in sync", default=False,
                                         description="Send the settings whenever the file is saved or a render "
                                                     "finishes")

    def draw(self, context):
        col = self.layout.column()
        col.prop(self, "kelvin")
        col.prop(self, "project")
        col.prop(self, "keep_in_sync")


class KELVIN_OT_send(bpy.types.Operator):
    """Send this scene's render settings to Kelvin's settings ledger"""

    bl_idname = "kelvin.send"
    bl_label = "Send to Kelvin"

    def execute(self, context):
        prefs = _prefs()
        ok, said = send(context.scene, prefs.kelvin if prefs else "kelvin", prefs.project if prefs else "")
        self.report({"INFO"} if ok else {"ERROR"}, said)
        return {"FINISHED"} if ok else {"CANCELLED"}


class KELVIN_PT_panel(bpy.types.Panel):
    bl_label = "Kelvin"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "render"

    def draw(self, context):
        prefs = _prefs()
        self.layout.operator(KELVIN_OT_send.bl_idname, icon="EXPORT")
        if prefs is not None:
            self.layout.prop(prefs, "keep_in_sync")


@persistent
def _in_sync(*_args):
    prefs = _prefs()
    if prefs is not None and prefs.keep_in_sync and bpy.context.scene is not None:
        ok, said = send(bpy.context.scene, prefs.kelvin, prefs.project)
        if not ok:
            print(f"Kelvin: {said}")


_CLASSES = (KelvinPreferences, KELVIN_OT_send, KELVIN_PT_panel)


def register():
    for cls in _CLASSES:
        bpy.utils.register_class(cls)
    for handlers in (bpy.app.handlers.save_post, bpy.app.handlers.render_complete):
        if _in_sync not in handlers:
            handlers.append(_in_sync)


def unregister():
    for handlers in (bpy.app.handlers.save_post, bpy.app.handlers.render_complete):
        if _in_sync in handlers:
            handlers.remove(_in_sync)
    for cls in reversed(_CLASSES):
        bpy.utils.unregister_class(cls)
