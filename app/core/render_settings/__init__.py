"""Render settings: the catalogue of what engines call their settings (``parameters``), the rules that
read settings out of a message (``extraction``, its phrase book ``cues``, the scopes of lights,
cameras and outputs ``scopes``, the learned status reading ``status_model``, what they produce
``mentions``, tables in answers ``answer_tables``), the optional model pass (``model_extraction``), the
ledger that folds them into a current value and its history (``ledger``), what a chip under an answer
says (``chips``), and a scene file's values against the decisions (``scene``). Pure: no I/O, no Qt."""
