"""Kelvin's Blender add-on (``kelvin_sync/``), shipped as files: they run inside Blender's Python,
never in Kelvin's (``kelvin scene addon`` writes the installable zip)."""
