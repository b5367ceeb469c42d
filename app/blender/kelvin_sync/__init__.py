"""Kelvin: send render settings — a Blender add-on (an Extension for Blender 4.2 and later, with
``blender_manifest.toml``; a legacy add-on, with ``bl_info``, for older ones).

A "Send to Kelvin" button in Render Properties, and an optional "Keep Kelvin in sync" switch that
sends the same whenever the file is saved or a render finishes. Blender is never held up: the
scene is read on Blender's main thread (``scene_reader.collect``, milliseconds — only the main thread
may touch Blender's data), and the ``kelvin`` command gets it on stdin in a background thread
(``sending``); the panel's status line says sent, sending, or failed and why. No network port is
opened, so neither other users nor web pages can send anything to Kelvin through it. Install:
``kelvin scene addon`` writes the zip (it knows the path of the Kelvin that wrote it); Blender →
Edit → Preferences → Get Extensions → Install from Disk (or Add-ons → Install from Disk before 4.2).
"""
from __future__ import annotations

import json

import bpy
from bpy.app.handlers import persistent

from . import scene_reader, sending

bl_info = {
    "name": "Kelvin: send render settings",
    "author": "Kelvin",
    "version": (1, 1, 0),
    "blender": (3, 6, 0),
    "location": "Properties → Render → Kelvin",
    "description": "Sends the scene's render settings to Kelvin's settings ledger (through the kelvin command)",
    "category": "Render",
}

SENDER = sending.Sender()
REDRAW_S = 0.5


def _prefs():
    addon = bpy.context.preferences.addons.get(__package__)
    return addon.preferences if addon is not None else None


def send(scene) -> None:
    """Read the scene here (the main thread) and send it in the background; returns at once."""
    prefs = _prefs()
    kelvin = (prefs.kelvin if prefs is not None else "") or sending.made_by()
    project = prefs.project if prefs is not None else ""
    payload = json.dumps(scene_reader.collect(scene)).encode("utf-8")
    SENDER.send(payload, sending.command_for(kelvin, project), scene.name)
    if not bpy.app.timers.is_registered(_redraw):
        bpy.app.timers.register(_redraw, first_interval=REDRAW_S)


def _redraw():
    """While a send is under way (and once after), the Properties editors show its status."""
    for window in getattr(bpy.context.window_manager, "windows", ()):
        for area in window.screen.areas:
            if area.type == "PROPERTIES":
                area.tag_redraw()
    if SENDER.busy():
        return REDRAW_S
    status = SENDER.status
    if status.state == "failed":
        sending.log(status.said)
    return None


class KelvinPreferences(bpy.types.AddonPreferences):
    bl_idname = __package__

    kelvin: bpy.props.StringProperty(name="kelvin command", default=sending.made_by(), subtype="FILE_PATH",
                                     description="The kelvin command (its full path if it is not on the PATH); "
                                                 "the Kelvin that wrote this add-on, unless you change it")
    project: bpy.props.StringProperty(name="Project", default="",
                                      description="Kelvin project to send to (empty: Kelvin's current project)")
    keep_in_sync: bpy.props.BoolProperty(name="Keep Kelvin in sync", default=False,
                                         description="Send the settings whenever the file is saved or a render "
                                                     "finishes (in the background: Blender never waits)")

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
        send(context.scene)
        self.report({"INFO"}, "Sending to Kelvin (in the background)")
        return {"FINISHED"}


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
        status = SENDER.status
        icon = {"sent": "CHECKMARK", "failed": "ERROR", "sending": "TIME"}.get(status.state, "INFO")
        self.layout.label(text=status.line(), icon=icon)


@persistent
def _in_sync(*_args):
    """After a save or a finished render: read the scene now, send it in the background."""
    prefs = _prefs()
    if prefs is not None and prefs.keep_in_sync and bpy.context.scene is not None:
        send(bpy.context.scene)


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
    if bpy.app.timers.is_registered(_redraw):
        bpy.app.timers.unregister(_redraw)
    for cls in reversed(_CLASSES):
        bpy.utils.unregister_class(cls)
