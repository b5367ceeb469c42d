"""Build a .blend with every render setting Kelvin reads at a known, non-default value (run with
Blender's Python: ``python blend_scene.py OUT.blend [--lights N] [--eevee] [--scene NAME] [--bait MARKS]``).

``--bait MARKS`` adds Python that leaves a file in the folder MARKS wherever it runs: a registered
text block (which also registers a load handler), and a scripted driver whose expression calls Python
(on the noise seed); and drivers with simple expressions, which Blender evaluates without Python,
on Max samples ("770 + 7") and the camera's focal length ("84 + 1") — the values the file holds.

``EXPECTED`` is what ``kelvin settings list`` must then hold as the file's values, value by value
(engine, key[, scope]) → value — the lights by their names, the active camera's lens and focus by the
camera's name; ``CANDIDATES`` what Kelvin keeps without a catalogue name. Imported by the tests without bpy."""
from __future__ import annotations

import sys

EXPECTED = {
    ("cycles", "max_samples"): 777, ("cycles", "viewport_samples"): 33, ("cycles", "noise_threshold"): 0.035,
    ("cycles", "min_samples"): 48, ("cycles", "time_limit"): "90", ("cycles", "max_bounces"): 9,
    ("cycles", "diffuse_bounces"): 3, ("cycles", "glossy_bounces"): 5, ("cycles", "transmission_bounces"): 7,
    ("cycles", "volume_bounces"): 2, ("cycles", "transparent_bounces"): 11, ("cycles", "clamp_direct"): 4,
    ("cycles", "clamp_indirect"): 7.5, ("cycles", "filter_glossy"): 0.6, ("cycles", "caustics_reflective"): False,
    ("cycles", "caustics_refractive"): True, ("cycles", "light_tree"): False, ("", "denoiser"): "none",
    ("", "exposure"): 0.7, ("", "resolution"): "2048x858", ("", "resolution_percentage"): 50,
    ("", "frame_rate"): 25, ("", "frame_start"): 1001, ("", "frame_end"): 1240, ("", "motion_blur"): True,
    ("", "shutter_angle"): 180, ("", "focal_length", "camera"): 85, ("", "sensor_width", "camera"): 24,
    ("", "depth_of_field", "camera"): True, ("", "f_stop", "camera"): 2.2, ("", "focus_distance", "camera"): 3.5,
    ("", "view_transform"): "standard", ("", "light_power", "key"): 350, ("", "light_temperature", "key"): 4300,
    ("", "light_power", "rim"): 80,
}
UNITS = {("", "exposure"): "ev", ("", "resolution"): "px", ("", "resolution_percentage"): "%", ("", "frame_rate"): "fps",
         ("", "shutter_angle"): "°", ("", "focal_length", "camera"): "mm", ("", "sensor_width", "camera"): "mm",
         ("", "focus_distance", "camera"): "m", ("", "light_power", "key"): "W", ("", "light_temperature", "key"): "K",
         ("", "light_power", "rim"): "W"}
CANDIDATES = {"render_engine": "Cycles", "adaptive_sampling": True, "film_transparent": True, "look": "None",
              "light_key_type": "Area", "light_rim_type": "Spot", "active_camera": "Camera"}
MARKS = ("text-block-ran", "load-handler-ran", "driver-ran")  # what the bait leaves where it runs


def bait(marks: str) -> None:
    """Python in the file that leaves a mark in ``marks`` wherever it runs."""
    import bpy

    text = bpy.data.texts.new("kelvin_bait.py")
    text.write(f"""import bpy, pathlib
pathlib.Path({marks!r}, "text-block-ran").write_text("ran")

@bpy.app.handlers.persistent
def kelvin_bait_on_load(*_):
    pathlib.Path({marks!r}, "load-handler-ran").write_text("ran")

bpy.app.handlers.load_post.append(kelvin_bait_on_load)
""")
    text.use_module = True  # "Register": runs when the file is opened with scripts allowed
    s = bpy.context.scene
    python = s.driver_add("cycles.seed")  # a value Kelvin does not read: whatever the driver gives
    python.driver.type = "SCRIPTED"
    python.driver.expression = f"__import__('pathlib').Path({marks!r}, 'driver-ran').write_text('ran') and 1"
    for owner, path, expression in ((s, "cycles.samples", "770 + 7"), (s.camera.data, "lens", "84 + 1")):
        driver = owner.driver_add(path).driver  # simple expressions: Blender evaluates them without Python
        driver.type, driver.expression = "SCRIPTED", expression


def build(out: str, lights: int = 0, eevee: bool = False, scene_name: str = "", marks: str = "") -> None:
    import bpy

    s = bpy.context.scene
    if scene_name:
        s.name = scene_name
    s.render.engine = "BLENDER_EEVEE" if eevee else "CYCLES"
    c = s.cycles
    c.samples, c.preview_samples = 777, 33
    c.use_adaptive_sampling, c.adaptive_threshold, c.adaptive_min_samples = True, 0.035, 48
    c.time_limit = 90
    c.max_bounces, c.diffuse_bounces, c.glossy_bounces, c.transmission_bounces, c.volume_bounces = 9, 3, 5, 7, 2
    c.transparent_max_bounces = 11
    c.sample_clamp_direct, c.sample_clamp_indirect, c.blur_glossy = 4, 7.5, 0.6
    c.caustics_reflective, c.caustics_refractive, c.use_light_tree = False, True, False
    c.use_denoising = False  # OptiX needs an NVIDIA GPU: "no denoiser" is the non-default value here
    s.render.film_transparent = True
    s.view_settings.view_transform, s.view_settings.exposure = "Standard", 0.7
    s.render.resolution_x, s.render.resolution_y, s.render.resolution_percentage = 2048, 858, 50
    s.render.fps, s.render.fps_base = 25, 1.0
    s.frame_start, s.frame_end = 1001, 1240
    s.render.use_motion_blur, s.render.motion_blur_shutter = True, 0.5
    cam = s.camera.data
    cam.lens, cam.sensor_width = 85, 24
    cam.dof.use_dof, cam.dof.aperture_fstop, cam.dof.focus_distance = True, 2.2, 3.5
    for o in [o for o in s.objects if o.type == "LIGHT"]:
        bpy.data.objects.remove(o)
    key = bpy.data.lights.new("Key", "AREA")
    key.energy, key.use_temperature, key.temperature = 350, True, 4300
    rim = bpy.data.lights.new("Rim", "SPOT")
    rim.energy = 80
    for name, light in (("Key", key), ("Rim", rim)):
        s.collection.objects.link(bpy.data.objects.new(name, light))
    for n in range(lights):
        fill = bpy.data.lights.new(f"Fill{n:03d}", "POINT")
        s.collection.objects.link(bpy.data.objects.new(f"Fill{n:03d}", fill))
    if marks:
        bait(marks)
    bpy.ops.wm.save_as_mainfile(filepath=out, compress=False)



if __name__ == "__main__":
    args = sys.argv[1:]
    build(args[0], lights=int(args[args.index("--lights") + 1]) if "--lights" in args else 0, eevee="--eevee" in args,
          scene_name=args[args.index("--scene") + 1] if "--scene" in args else "",
          marks=args[args.index("--bait") + 1] if "--bait" in args else "")
