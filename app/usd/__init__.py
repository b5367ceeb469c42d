"""Reading USD stages (.usd, .usda, .usdc) for ``kelvin scene import``: ``usd_reader.py`` is shipped
as a file and run with a Python that has Pixar's USD module, never imported by Kelvin."""
