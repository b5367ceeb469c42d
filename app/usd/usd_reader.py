"""The render settings of a USD stage (.usd, .usda, .usdc — what Houdini's Solaris and every USD
pipeline write), in Kelvin's scene format. Runs with a Python that has Pixar's USD module
(``pip install usd-core``), in a process of its own: Kelvin's own process never imports ``pxr``::

    python usd_reader.py FILE.usd [--scene /Render/rendersettings] --out RESULT.json

What is read: the ``UsdRender.Settings`` prim (the one the stage names in its ``renderSettingsPrimPath``
metadata, else the only one, else the one ``--scene`` names) — resolution, pixel aspect ratio, motion
blur and depth of field where it turns them off — and its camera (``UsdGeom.Camera``: focal length,
horizontal aperture as the sensor width, f-stop, focus distance in metres, exposure, the shutter as
an angle); the stage's frame range and rate; each light's type, intensity, exposure and colour
temperature (up to 100); and the renderer's own attributes on the settings prim, by namespace:
Karma's ``karma:global:*`` (names SideFX documents), Redshift's ``redshift:global:*`` (Redshift's
render option names, as its Solaris plug-in writes them), Octane's ``octane:*`` and any other
renderer's — a name Kelvin's catalogue knows becomes that setting, any other is kept as a candidate
under its own words. A value that changes over time (time samples) is read at the first frame and
marked as animated. Only the standard library and ``pxr``: this file runs as it is.
"""
from __future__ import annotations

import json
import os
import re
import sys

FORMAT = "kelvin-scene"
VERSION = 1
MAX_LIGHTS = 100
RENDERERS = {"karma": "karma", "redshift": "redshift", "octane": "octane", "arnold": "arnold", "cycles": "cycles",
             "vray": "vray", "corona": "corona", "ri": "renderman", "prman": "renderman"}
# Karma's render settings as Solaris writes them (karma:global:<name>) → Kelvin's keys; the rest are
# kept under these readable names
KARMA = {"samplesperpixel": ("karma", "pixel_samples"), "pathtracedsamples": ("karma", "path_traced_samples"),
         "diffuselimit": ("karma", "diffuse_limit"), "reflectlimit": ("karma", "reflection_limit"),
         "reflectionlimit": ("karma", "reflection_limit"), "refractlimit": ("karma", "refraction_limit"),
         "refractionlimit": ("karma", "refraction_limit"), "convergencemode": ("karma", "convergence_mode"),
         "enabledof": ("", "depth_of_field"), "enablemblur": ("", "motion_blur"),
         "enablemotionblur": ("", "motion_blur")}
KARMA_NAMES = {"minpathtracedsamples": "Min path traced samples", "pixeloracle": "Pixel oracle",
               "convergencethreshold": "Convergence threshold", "volumelimit": "Volume limit",
               "ssslimit": "SSS limit", "colorlimit": "Color limit", "engine": "Rendering engine",
               "enabledenoising": "Denoising", "volumesteprate": "Volume step rate"}
# Redshift's render option names (redshift:global:<Name>) → Kelvin's keys
REDSHIFT = {"unifiedminsamples": "unified_samples_min", "unifiedmaxsamples": "unified_samples_max",
            "unifiedadaptiveerrorthreshold": "adaptive_error_threshold", "numgibounces": "gi_bounces",
            "bruteforceginumrays": "brute_force_rays", "reflectionmaxtracedepth": "reflection_max_trace_depth",
            "refractionmaxtracedepth": "refraction_max_trace_depth", "combinedmaxtracedepth": "combined_max_trace_depth",
            "transparencymaxtracedepth": "transparency_max_trace_depth",
            "maxsecondaryrayintensity": "max_secondary_ray_intensity", "bucketsize": "bucket_size"}
_VALUES = {"pathtraced": "path traced"}  # tokens whose words Kelvin reads with a space


def _num(v):
    if isinstance(v, bool) or isinstance(v, int):
        return v
    f = float(f"{float(v):.6g}")
    return int(f) if f.is_integer() and abs(f) < 1e15 else f


def _plain(v):
    """A USD value as JSON: numbers, on/off, text; vectors as lists."""
    if isinstance(v, (bool, int, float)):
        return _num(v)
    if isinstance(v, str):
        return _VALUES.get(v, v)
    try:
        return [_plain(x) for x in v]
    except TypeError:
        return str(v)


def words(name: str) -> str:
    """"UnifiedMaxSamples", "max_samples", "maxSamples" → "Unified max samples"; "NumGIBounces" →
    "Num GI bounces" (abbreviations stay as written)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", name).replace("_", " ").replace(":", " ")
    said = [w if len(w) > 1 and w.isupper() else w.lower() for w in spaced.split()]
    text = " ".join(said)
    return text[:1].upper() + text[1:]


def _value(attr, first_frame):
    """(value, how it is computed): the default value, or the first frame's with "animated"."""
    from pxr import Usd

    samples = attr.GetNumTimeSamples()
    if samples:
        return attr.Get(Usd.TimeCode(first_frame)), f"animated ({samples} keys; the value at frame {_num(first_frame)})"
    return attr.Get(), ""


def collect(stage, settings_prim, path: str) -> dict:
    from pxr import Usd, UsdGeom, UsdLux, UsdRender

    settings: list[dict] = []
    extra: list[dict] = []
    notes: list[str] = []
    first = stage.GetStartTimeCode() if stage.HasAuthoredTimeCodeRange() else 0

    def put(engine: str, parameter: str, value, how: str = "", **scope) -> None:
        settings.append({"engine": engine, "parameter": parameter, "value": value, **scope,
                         **({"driven": how} if how else {})})

    def keep(name: str, value, unit: str = "", how: str = "", **scope) -> None:
        extra.append({"name": name, "value": value, "unit": unit, **scope, **({"driven": how} if how else {})})

    def authored(attr):
        return attr is not None and attr.IsValid() and attr.HasAuthoredValue()

    rs = UsdRender.Settings(settings_prim)
    res = rs.GetResolutionAttr()
    if authored(res):
        (w, h), how = _value(res, first)
        put("", "resolution", f"{int(w)}x{int(h)}", how)
    pixel = rs.GetPixelAspectRatioAttr()
    if authored(pixel):
        value, how = _value(pixel, first)
        keep("Pixel aspect ratio", _num(value), how=how)
    for attr, key in ((rs.GetDisableMotionBlurAttr(), "motion_blur"), (rs.GetDisableDepthOfFieldAttr(), "depth_of_field")):
        if authored(attr):
            value, how = _value(attr, first)
            put("", key, not bool(value), how)
    engines: list[str] = []
    for attr in settings_prim.GetAuthoredAttributes():
        name = attr.GetName()
        space, _, rest = name.partition(":")
        engine = RENDERERS.get(space)
        if engine is None or not rest:
            continue
        engines.append(engine)
        value, how = _value(attr, first)
        if value is None:
            continue
        value = _plain(value)
        tail = rest.split(":")[-1]
        if space == "karma" and tail.lower() in KARMA:
            engine_key, key = KARMA[tail.lower()]
            put(engine_key, key, bool(value) if key in ("depth_of_field", "motion_blur") else value, how)
        elif space == "karma":
            keep(f"Karma {KARMA_NAMES.get(tail.lower(), words(tail).lower())}", value, how=how)
        elif space == "redshift" and tail.lower() in REDSHIFT:
            put("redshift", REDSHIFT[tail.lower()], value, how)
        else:  # the catalogue knows it by its words, or it is kept as a candidate under them
            settings.append({"engine": engine, "name": words(tail), "value": value,
                             **({"driven": how} if how else {})})
    engine = max(set(engines), key=engines.count) if engines else ""
    cams = rs.GetCameraRel().GetForwardedTargets()
    cam_prim = stage.GetPrimAtPath(cams[0]) if cams else None
    if cam_prim is not None and cam_prim.IsValid() and cam_prim.IsA(UsdGeom.Camera):
        cam = UsdGeom.Camera(cam_prim)
        named = {"camera": cam_prim.GetName()}
        keep("Active camera", cam_prim.GetName())
        metres = UsdGeom.GetStageMetersPerUnit(stage)
        for attr, key, scale in ((cam.GetFocalLengthAttr(), "focal_length", 1), (cam.GetHorizontalApertureAttr(),
                                                                                  "sensor_width", 1),
                                 (cam.GetFocusDistanceAttr(), "focus_distance", metres),
                                 (cam.GetExposureAttr(), "exposure", 1)):
            if authored(attr):
                value, how = _value(attr, first)
                put("", key, _num(value * scale), how, **named)
        fstop = cam.GetFStopAttr()
        if authored(fstop):
            value, how = _value(fstop, first)
            if value:  # 0: USD's "no depth of field"
                put("", "f_stop", _num(value), how, **named)
        opened, closed = cam.GetShutterOpenAttr(), cam.GetShutterCloseAttr()
        if authored(closed) or authored(opened):
            (a, how_a), (b, how_b) = _value(opened, first), _value(closed, first)
            put("", "shutter_angle", _num((b - a) * 360.0), how_a or how_b, **named)  # shutter in frames
    elif cams:
        notes.append(f"the render settings name the camera {cams[0]}, which is not a camera in the file: no lens, "
                     "sensor or f-stop")
    else:
        notes.append("the render settings name no camera: no lens, sensor or f-stop")
    if stage.HasAuthoredTimeCodeRange():
        put("", "frame_start", _num(stage.GetStartTimeCode()))
        put("", "frame_end", _num(stage.GetEndTimeCode()))
    if stage.HasAuthoredMetadata("framesPerSecond") or stage.HasAuthoredMetadata("timeCodesPerSecond"):
        put("", "frame_rate", _num(stage.GetFramesPerSecond()))
    lights = [p for p in stage.Traverse() if p.HasAPI(UsdLux.LightAPI)]
    if len(lights) > MAX_LIGHTS:
        notes.append(f"the file has {len(lights):,} lights: they are not read one by one (at most {MAX_LIGHTS})")
        lights = []
    for p in sorted(lights, key=lambda p: p.GetName()):
        light, name = UsdLux.LightAPI(p), p.GetName()
        keep(f"Light {name} type", words(p.GetTypeName().replace("Light", "")) or "Light", light=name)
        for attr, label, unit in ((light.GetIntensityAttr(), "intensity", ""), (light.GetExposureAttr(), "exposure",
                                                                                 "ev")):
            if authored(attr):
                value, how = _value(attr, first)
                keep(f"Light {name} {label}", _num(value), unit, how, light=name)
        if authored(light.GetEnableColorTemperatureAttr()) and light.GetEnableColorTemperatureAttr().Get():
            value, how = _value(light.GetColorTemperatureAttr(), first)
            keep(f"Light {name} temperature", _num(value), "K", how, light=name)
    said = sum(1 for x in settings + extra if str(x.get("driven", "")).startswith("animated"))
    if said:
        notes.append(f"{said} value{'s are' if said > 1 else ' is'} animated in the file: read at frame {_num(first)}")
    return {"format": FORMAT, "version": VERSION, "app": f"USD {'.'.join(str(x) for x in Usd.GetVersion())}",
            "file": path, "scene": str(settings_prim.GetPath()), "engine": engine, "settings": settings,
            "extra": extra, "notes": notes}


def _why(error: str, path: str) -> str:
    """USD's error without its C++ location: "Sdf crate file corrupt, possibly truncated: …", "line 3:
    Expected } at 'float b = '"."""
    said = " ".join(error.split())
    said = said.rsplit(" : '", 1)[-1].rstrip("'").strip() if " : '" in said else said
    said = re.sub(re.escape(path) + r":(\d+):\d+:", r"line \1:", said)
    said = re.sub(r" in </[^>]*>$", "", said)  # the prim the parser was in, as a path
    return said[:200].rstrip(". ")


def _args(argv: list[str]) -> tuple[str, str, str]:
    path, scene, out = "", "", ""
    i = 0
    while i < len(argv):
        if argv[i] == "--scene" and i + 1 < len(argv):
            scene, i = argv[i + 1], i + 2
        elif argv[i] == "--out" and i + 1 < len(argv):
            out, i = argv[i + 1], i + 2
        else:
            path, i = (argv[i], i + 1) if not path else (path, i + 1)
    return path, scene, out


def main(argv: list[str]) -> int:
    """Read FILE and write the result (or {"error", "message"}) to --out; exit 0 once it is written."""
    path, wanted, out = _args(argv)

    def done(result: dict) -> int:
        with open(out, "w", encoding="utf-8") as fh:
            json.dump(result, fh)
        return 0

    if not out:
        print("usage: usd_reader.py FILE.usd [--scene /Render/rendersettings] --out RESULT.json", file=sys.stderr)
        return 2
    try:
        from pxr import Sdf, Tf, Usd, UsdRender
    except ImportError:
        return done({"error": "no-usd", "message": "this Python has no pxr"})
    name = os.path.basename(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        return done({"error": "unreadable", "message": f"{path} cannot be read ({exc.strerror or exc})"})
    if not (head.startswith(b"#usda") or head.startswith(b"PXR-USDC")) and not path.lower().endswith(".usdz"):
        return done({"error": "not-usd", "message": f"{path} is not a USD file (neither .usda text nor .usdc crate)"})
    try:
        layer = Sdf.Layer.FindOrOpen(path)
        stage = Usd.Stage.Open(layer, load=Usd.Stage.LoadNone) if layer is not None else None
    except Tf.ErrorException as exc:
        return done({"error": "damaged", "message": f"USD could not open {name}: {_why(str(exc), path)}"})
    if stage is None:
        return done({"error": "damaged", "message": f"USD could not open {name}"})
    found = [p for p in stage.Traverse() if p.IsA(UsdRender.Settings)]
    if wanted:
        prim = stage.GetPrimAtPath(wanted) if Sdf.Path.IsValidPathString(wanted) else None
        if prim is None or not prim.IsValid() or not prim.IsA(UsdRender.Settings):
            have = ", ".join(str(p.GetPath()) for p in found) or "none"
            return done({"error": "no-scene", "message": f"{name} has no render settings {wanted} (it has {have})"})
    else:
        named = UsdRender.Settings.GetStageRenderSettings(stage)
        prim = named.GetPrim() if named else (found[0] if len(found) == 1 else None)
        if prim is None or not prim.IsValid():
            if not found:
                return done({"error": "no-settings", "message": f"{name} holds no render settings (no "
                                                                f"UsdRender.Settings prim, what a Render Settings LOP "
                                                                "writes); nothing was imported"})
            have = ", ".join(str(p.GetPath()) for p in found)
            return done({"error": "no-scene", "message": f"{name} has several render settings ({have}); choose one "
                                                        "with --scene"})
    return done(collect(stage, prim, os.path.abspath(path)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
