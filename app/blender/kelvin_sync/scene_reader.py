"""The render settings of a Blender scene, in Kelvin's scene format (runs inside Blender's Python).

Two callers: the add-on (``collect(scene)`` on the scene open in Blender), and ``kelvin scene
import FILE.blend``, which runs this file in a separate process with Blender's Python (Kelvin's own
process never imports ``bpy``)::

    python scene_reader.py FILE.blend [--scene NAME] --out RESULT.json
    blender --background --factory-startup --python scene_reader.py -- FILE.blend --out RESULT.json

The format (``docs/scene-format.md``; any DCC script may send the same): ``{"format":
"kelvin-scene", "version": 1, "app": …, "file": …, "scene": …, "engine": …, "settings": [{"engine",
"parameter", "value"}…], "extra": [{"name", "value", "unit"}…], "notes": […]}`` — ``settings`` use
the keys of Kelvin's catalogue; ``extra`` holds what it has no key for (kept as candidates), named as
Blender's own interface names it ("Denoising prefilter": "Accurate"). A value a light or the camera
holds says which (``"light": "Key"``, ``"camera": "Camera"``); a value a driver computes says so
(``"driven": "var * 2"``): the file holds the value the driver last gave.

Safe by choice: the file is opened with ``use_scripts=False`` (and Blender, where it is the program
that runs this, with ``--disable-autoexec``), so a .blend carrying Python — a registered text block,
a scripted driver, a load handler — runs none of it.
Only the standard library and ``bpy``: this file is copied into Blender as it is.
"""
from __future__ import annotations

import json
import os
import sys

FORMAT = "kelvin-scene"
VERSION = 1
MAX_LIGHTS = 100  # more lights than this: the render settings come, the lights are summed up in a note

_DENOISERS = {"OPENIMAGEDENOISE": "oidn", "OPTIX": "optix"}
_ENGINES = {"CYCLES": "cycles", "BLENDER_EEVEE": "eevee", "BLENDER_EEVEE_NEXT": "eevee", "BLENDER_WORKBENCH": "workbench"}


def _num(v):
    """A Blender float as a person wrote it (0.009999999776 → 0.01), ints as ints."""
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    f = float(f"{float(v):.6g}")
    return int(f) if f.is_integer() and abs(f) < 1e15 else f


def _label(owner, prop: str) -> str:
    """An enum value as Blender's interface names it ("ACCURATE" → "Accurate")."""
    value = getattr(owner, prop)
    try:
        return owner.bl_rna.properties[prop].enum_items[value].name
    except (KeyError, AttributeError):
        return str(value).replace("_", " ").capitalize()


def _drivers(idblock) -> dict[str, str]:
    """The data paths a data-block's drivers set, each with what computes it: its expression, or
    "a driver" (one that sums or averages other values)."""
    anim = getattr(idblock, "animation_data", None)
    out: dict[str, str] = {}
    for fc in (anim.drivers if anim is not None else ()):
        d = fc.driver
        out[fc.data_path] = (d.expression.strip() or "an empty expression") if d.type == "SCRIPTED" else "a driver"
    return out


def collect(scene, path: str = "") -> dict:
    """The scene's render settings in Kelvin's format."""
    import bpy

    r = scene.render
    settings: list[dict] = []
    extra: list[dict] = []
    notes: list[str] = []
    driven = {"scene": _drivers(scene)}
    cam = scene.camera
    camera_data = cam.data if cam is not None and cam.type == "CAMERA" else None
    if camera_data is not None:
        driven["camera"] = _drivers(camera_data)

    def marks(source: str, path: str) -> dict:
        how = driven.get(source, {}).get(path)
        scope = {"camera": cam.name} if source == "camera" and cam is not None else {}
        return {**scope, **({"driven": how} if how else {})}

    def put(engine: str, parameter: str, value, path: str = "", source: str = "scene") -> None:
        settings.append({"engine": engine, "parameter": parameter, "value": value, **marks(source, path)})

    def keep(name: str, value, unit: str = "", path: str = "", source: str = "scene", **scope) -> None:
        extra.append({"name": name, "value": value, "unit": unit, **marks(source, path), **scope})

    engine = _ENGINES.get(r.engine, r.engine.lower())
    keep("Render engine", {"cycles": "Cycles", "eevee": "EEVEE", "workbench": "Workbench"}.get(engine, r.engine))
    if engine == "cycles":
        c = scene.cycles
        put("cycles", "max_samples", int(c.samples), "cycles.samples")
        put("cycles", "viewport_samples", int(c.preview_samples), "cycles.preview_samples")
        keep("Adaptive sampling", bool(c.use_adaptive_sampling), path="cycles.use_adaptive_sampling")
        if c.use_adaptive_sampling:
            put("cycles", "noise_threshold", _num(c.adaptive_threshold), "cycles.adaptive_threshold")
            put("cycles", "min_samples", int(c.adaptive_min_samples), "cycles.adaptive_min_samples")
        if c.time_limit:
            put("cycles", "time_limit", f"{_num(c.time_limit)}", "cycles.time_limit")
        for key, attr in (("max_bounces", "max_bounces"), ("diffuse_bounces", "diffuse_bounces"),
                          ("glossy_bounces", "glossy_bounces"), ("transmission_bounces", "transmission_bounces"),
                          ("volume_bounces", "volume_bounces"), ("transparent_bounces", "transparent_max_bounces")):
            put("cycles", key, int(getattr(c, attr)), f"cycles.{attr}")
        put("cycles", "clamp_direct", _num(c.sample_clamp_direct), "cycles.sample_clamp_direct")
        put("cycles", "clamp_indirect", _num(c.sample_clamp_indirect), "cycles.sample_clamp_indirect")
        put("cycles", "filter_glossy", _num(c.blur_glossy), "cycles.blur_glossy")
        put("cycles", "caustics_reflective", bool(c.caustics_reflective), "cycles.caustics_reflective")
        put("cycles", "caustics_refractive", bool(c.caustics_refractive), "cycles.caustics_refractive")
        put("cycles", "light_tree", bool(c.use_light_tree), "cycles.use_light_tree")
        put("", "denoiser", _DENOISERS.get(c.denoiser, c.denoiser.lower()) if c.use_denoising else "none",
            "cycles.denoiser")
        if c.use_denoising:
            keep("Denoising passes", _label(c, "denoising_input_passes"), path="cycles.denoising_input_passes")
            keep("Denoising prefilter", _label(c, "denoising_prefilter"), path="cycles.denoising_prefilter")
            if hasattr(c, "denoising_quality"):
                keep("Denoising quality", _label(c, "denoising_quality"), path="cycles.denoising_quality")
        if hasattr(c, "film_exposure"):
            keep("Film exposure", _num(c.film_exposure), path="cycles.film_exposure")
    keep("Film transparent", bool(r.film_transparent), path="render.film_transparent")
    vs = scene.view_settings
    keep("View transform", _label(vs, "view_transform"), path="view_settings.view_transform")
    keep("Look", _label(vs, "look") if vs.look and vs.look != "None" else "None", path="view_settings.look")
    put("", "exposure", _num(vs.exposure), "view_settings.exposure")
    put("", "resolution", f"{int(r.resolution_x)}x{int(r.resolution_y)}", "render.resolution_x")
    if "render.resolution_y" in driven["scene"] and "render.resolution_x" not in driven["scene"]:
        settings[-1]["driven"] = driven["scene"]["render.resolution_y"]
    put("", "resolution_percentage", int(r.resolution_percentage), "render.resolution_percentage")
    put("", "frame_rate", _num(r.fps / (r.fps_base or 1.0)), "render.fps")
    put("", "frame_start", int(scene.frame_start), "frame_start")
    put("", "frame_end", int(scene.frame_end), "frame_end")
    put("", "motion_blur", bool(r.use_motion_blur), "render.use_motion_blur")
    if r.use_motion_blur:  # Blender's shutter is a part of the frame
        put("", "shutter_angle", _num(r.motion_blur_shutter * 360.0), "render.motion_blur_shutter")
    if camera_data is not None:
        d = camera_data
        keep("Active camera", cam.name)
        put("", "focal_length", _num(d.lens), "lens", "camera")
        put("", "sensor_width", _num(d.sensor_width), "sensor_width", "camera")
        put("", "depth_of_field", bool(d.dof.use_dof), "dof.use_dof", "camera")
        if d.dof.use_dof:
            put("", "f_stop", _num(d.dof.aperture_fstop), "dof.aperture_fstop", "camera")
            if d.dof.focus_object is None:
                put("", "focus_distance", _num(d.dof.focus_distance), "dof.focus_distance", "camera")
            else:
                keep("Focus object", d.dof.focus_object.name, camera=cam.name)
    else:
        notes.append("the scene has no active camera: no lens, sensor or f-stop")
    lights = [o for o in scene.objects if o.type == "LIGHT"]
    if len(lights) > MAX_LIGHTS:
        notes.append(f"the scene has {len(lights):,} lights: they are not read one by one (at most {MAX_LIGHTS})")
    else:
        for o in sorted(lights, key=lambda o: o.name):
            li = o.data
            driven[f"light {o.name}"] = _drivers(li)
            src = f"light {o.name}"
            keep(f"Light {o.name} type", _label(li, "type"), light=o.name)
            keep(f"Light {o.name} power", _num(li.energy), "W" if li.type != "SUN" else "W/m²", "energy", src,
                 light=o.name)
            if getattr(li, "use_temperature", False):
                keep(f"Light {o.name} temperature", _num(li.temperature), "K", "temperature", src, light=o.name)
    said = [f"{x.get('parameter') or x.get('name')}" for x in settings + extra if x.get("driven")]
    if said:
        notes.append(f"{len(said)} value{'s are' if len(said) > 1 else ' is'} computed by a driver in the file "
                     f"(scripts do not run when Kelvin reads it): the value{'s' if len(said) > 1 else ''} the "
                     "file holds from the driver's last run")
    return {"format": FORMAT, "version": VERSION, "app": f"Blender {bpy.app.version_string}",
            "file": path or bpy.data.filepath, "scene": scene.name, "engine": engine,
            "settings": settings, "extra": extra, "notes": notes}


def _args(argv: list[str]) -> tuple[str, str, str]:
    if "--" in argv:  # blender … --python scene_reader.py -- FILE …
        argv = argv[argv.index("--") + 1:]
    path, scene, out = "", "", ""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--scene" and i + 1 < len(argv):
            scene, i = argv[i + 1], i + 2
        elif a == "--out" and i + 1 < len(argv):
            out, i = argv[i + 1], i + 2
        else:
            path, i = (a, i + 1) if not path else (path, i + 1)
    return path, scene, out


def main(argv: list[str]) -> int:
    """Read FILE.blend and write the result (or {"error": …}) to --out. Exit 0 either way once
    --out is written: the caller reads the error from the file."""
    path, scene_name, out = _args(argv)

    def done(result: dict) -> int:
        with open(out, "w", encoding="utf-8") as fh:
            json.dump(result, fh)
        return 0

    if not out:
        print("usage: scene_reader.py FILE.blend [--scene NAME] --out RESULT.json", file=sys.stderr)
        return 2
    try:
        import bpy
    except ImportError:
        return done({"error": "no-blender", "message": "this Python has no bpy"})
    if not os.path.isfile(path):
        return done({"error": "missing", "message": f"{path} does not exist"})
    try:
        with open(path, "rb") as fh:
            head = fh.read(12)
    except OSError as exc:
        return done({"error": "unreadable", "message": f"{path} cannot be read ({exc.strerror or exc})"})
    if not (head.startswith(b"BLENDER") or head[:4] in (b"\x28\xb5\x2f\xfd", b"\x1f\x8b\x08\x00")):
        return done({"error": "not-blend", "message": f"{path} is not a .blend file"})
    try:
        # use_scripts=False: a registered text block, a scripted driver or a load handler in the file
        # runs none of its Python (said here, not left to Blender's default or the artist's preference)
        bpy.ops.wm.open_mainfile(filepath=path, load_ui=False, use_scripts=False)
    except Exception as exc:  # noqa: BLE001 — Blender says RuntimeError with its own words
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return done({"error": "damaged", "message": f"Blender could not open {path}: {first}"})
    if tuple(bpy.data.version[:2]) > tuple(bpy.app.version[:2]):
        saved = ".".join(str(x) for x in bpy.data.version[:2])
        return done({"error": "newer", "message": f"{path} was saved by Blender {saved}, newer than this "
                                                   f"Blender {bpy.app.version_string}; its settings may not read right"})
    if scene_name:
        scene = bpy.data.scenes.get(scene_name)
        if scene is None:
            names = ", ".join(repr(s.name) for s in bpy.data.scenes)
            return done({"error": "no-scene", "message": f"{path} has no scene {scene_name!r} (it has {names})"})
    else:
        scene = bpy.context.scene or (bpy.data.scenes[0] if bpy.data.scenes else None)
        if scene is None:
            return done({"error": "no-scene", "message": f"{path} has no scene"})
    return done(collect(scene, os.path.abspath(path)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
