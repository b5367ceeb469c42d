"""Kelvin: a desktop companion for 3D rendering artists."""

__version__ = "0.1.0"
