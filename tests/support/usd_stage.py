"""Build USD stages the way Houdini's Solaris writes them, with Pixar's usd-core (run with a Python that
has ``pxr``: ``python usd_stage.py OUT.usda|OUT.usdc {karma|redshift|octane|two|none|nocamera}``).

``karma``: a Karma Render Settings prim at /Render/rendersettings named by the stage's
renderSettingsPrimPath, its camera, two lights, a frame range in centimetres (metersPerUnit 0.01), one
value animated. ``redshift``/``octane``: the same camera with that renderer's namespaced attributes.
``two``: two render settings prims and no renderSettingsPrimPath. ``none``: a camera, no render
settings. ``nocamera``: render settings whose camera relationship points at nothing.

``EXPECTED_KARMA`` is what ``kelvin settings list`` must then hold, (engine, key) → value; imported by
the tests without pxr."""
from __future__ import annotations

import sys

EXPECTED_KARMA = {  # what the file holds: (engine, key) → value, a light's or camera's (engine, key, its name)
    ("", "resolution"): "2048x858", ("karma", "path_traced_samples"): 256, ("karma", "pixel_samples"): 9,
    ("karma", "diffuse_limit"): 3, ("karma", "reflection_limit"): 6, ("karma", "refraction_limit"): 8,
    ("karma", "convergence_mode"): "path_traced", ("", "depth_of_field", "shotcam"): True, ("", "motion_blur"): True,
    ("", "focal_length", "shotcam"): 35, ("", "sensor_width", "shotcam"): 36, ("", "f_stop", "shotcam"): 2.8,
    ("", "focus_distance", "shotcam"): 3.5, ("", "exposure"): 0.5, ("", "shutter_angle"): 180,
    ("", "frame_start"): 1001, ("", "frame_end"): 1100, ("", "frame_rate"): 24,
    ("", "light_temperature", "key"): 4500, ("", "light_intensity", "key"): 30, ("", "light_intensity", "sky"): 1,
}
CANDIDATES_KARMA = {"pixel_aspect_ratio": 2, "karma_convergence_threshold": 0.005, "karma_rendering_engine": "xpu",
                    "karma_volume_limit": 2, "active_camera": "shotcam", "light_key_type": "Rect",
                    "light_key_exposure": 2, "light_sky_type": "Dome"}


def camera(stage, path: str = "/cameras/shotcam"):
    from pxr import Gf, UsdGeom

    cam = UsdGeom.Camera.Define(stage, path)
    cam.CreateFocalLengthAttr(35.0)
    cam.CreateHorizontalApertureAttr(36.0)
    cam.CreateVerticalApertureAttr(15.1)
    cam.CreateFStopAttr(2.8)
    cam.CreateFocusDistanceAttr(350.0)  # centimetres: 3.5 m
    cam.CreateShutterOpenAttr(-0.25)
    cam.CreateShutterCloseAttr(0.25)  # half a frame: 180°
    cam.CreateExposureAttr(0.5)
    cam.AddTranslateOp().Set(Gf.Vec3d(0, 150, 800))
    return cam


def settings(stage, path: str = "/Render/rendersettings", cam: str = "/cameras/shotcam"):
    from pxr import Gf, UsdRender

    rs = UsdRender.Settings.Define(stage, path)
    rs.CreateResolutionAttr(Gf.Vec2i(2048, 858))
    rs.CreatePixelAspectRatioAttr(2.0)  # anamorphic
    rs.CreateCameraRel().SetTargets([cam])
    return rs


def build(out: str, kind: str) -> None:
    from pxr import Sdf, Usd, UsdGeom, UsdLux

    stage = Usd.Stage.CreateNew(out)
    UsdGeom.SetStageMetersPerUnit(stage, 0.01)
    stage.SetStartTimeCode(1001)
    stage.SetEndTimeCode(1100)
    stage.SetFramesPerSecond(24)
    stage.SetTimeCodesPerSecond(24)
    camera(stage)
    key = UsdLux.RectLight.Define(stage, "/lights/key")
    key.CreateIntensityAttr(30.0)
    key.CreateExposureAttr(2.0)
    key.CreateEnableColorTemperatureAttr(True)
    key.CreateColorTemperatureAttr(4500.0)
    UsdLux.DomeLight.Define(stage, "/lights/sky").CreateIntensityAttr(1.0)
    if kind == "karma":
        rs = settings(stage).GetPrim()
        for name, kind_, value in (("pathtracedsamples", Sdf.ValueTypeNames.Int, 256),
                                   ("samplesperpixel", Sdf.ValueTypeNames.Int, 9),
                                   ("diffuselimit", Sdf.ValueTypeNames.Int, 3), ("reflectlimit", Sdf.ValueTypeNames.Int, 6),
                                   ("refractlimit", Sdf.ValueTypeNames.Int, 8),
                                   ("convergencemode", Sdf.ValueTypeNames.Token, "pathtraced"),
                                   ("convergencethreshold", Sdf.ValueTypeNames.Float, 0.005),
                                   ("engine", Sdf.ValueTypeNames.Token, "xpu"), ("enabledof", Sdf.ValueTypeNames.Bool, True),
                                   ("enablemblur", Sdf.ValueTypeNames.Bool, True)):
            rs.CreateAttribute(f"karma:global:{name}", kind_).Set(value)
        volume = rs.CreateAttribute("karma:global:volumelimit", Sdf.ValueTypeNames.Int)
        volume.Set(2, Usd.TimeCode(1001))  # animated: 2 at the first frame, 4 at the last
        volume.Set(4, Usd.TimeCode(1100))
        stage.SetMetadata("renderSettingsPrimPath", "/Render/rendersettings")
    elif kind == "redshift":
        rs = settings(stage).GetPrim()
        for name, kind_, value in (("UnifiedMinSamples", Sdf.ValueTypeNames.Int, 16),
                                   ("UnifiedMaxSamples", Sdf.ValueTypeNames.Int, 512),
                                   ("BruteForceGINumRays", Sdf.ValueTypeNames.Int, 64),
                                   ("NumGIBounces", Sdf.ValueTypeNames.Int, 3),
                                   ("ReflectionMaxTraceDepth", Sdf.ValueTypeNames.Int, 6),
                                   ("PrimaryGIEngine", Sdf.ValueTypeNames.Int, 4),
                                   ("RS_outputEnable", Sdf.ValueTypeNames.Bool, True)):
            rs.CreateAttribute(f"redshift:global:{name}", kind_).Set(value)
        stage.SetMetadata("renderSettingsPrimPath", "/Render/rendersettings")
    elif kind == "octane":  # Octane's namespace; its attribute names are not documented where we could read
        rs = settings(stage).GetPrim()
        rs.CreateAttribute("octane:kernel:maxSamples", Sdf.ValueTypeNames.Int).Set(2000)
        rs.CreateAttribute("octane:kernel:giClamp", Sdf.ValueTypeNames.Float).Set(10.0)
        rs.CreateAttribute("octane:kernel:kernelType", Sdf.ValueTypeNames.Token).Set("pathTracing")
    elif kind == "two":
        settings(stage, "/Render/final")
        settings(stage, "/Render/preview")
    elif kind == "nocamera":
        settings(stage, cam="/cameras/missing")
        stage.SetMetadata("renderSettingsPrimPath", "/Render/rendersettings")
    stage.GetRootLayer().Save()


if __name__ == "__main__":
    build(sys.argv[1], sys.argv[2])
