"""The Settings table beside a DCC at 400 px: what was decided and what the file holds stay in
view (the engine moves in front of the name; when, by whom and the value before go to the history),
and a wide window shows every column again. A real Qt widget on a real ledger's rows."""
from __future__ import annotations

from PySide6.QtCore import Qt

from app.core.render_settings.ledger import Entry, Ledger
from app.core.render_settings.parameters import ANY
from app.ui.settings_view import CURRENT_COLUMNS, VALUE_COLUMN, WIDE_ONLY_COLUMNS, SettingsPanel


def _rows():
    ledger = Ledger()
    said = dict(status="applied", ts_ms=1_764_000_000_000, source_id="m1", domain="optimization")
    ledger.add(Entry(id="1.0", engine="redshift", parameter="brute_force_rays", value=256, unit="",
                     name="Brute-force rays", order=1, **said))
    ledger.add(Entry(id="2.0", engine="redshift", parameter="brute_force_rays", value=512, unit="", by="scene",
                     name="Brute-force rays", order=2, note="living_room_v12.hip", status="applied",
                     ts_ms=1_764_000_100_000, domain="optimization"))
    ledger.add(Entry(id="3.0", engine=ANY, parameter="light_temperature", value=5600, unit="K", scope="key",
                     name="Light temperature", order=3, **said))
    ledger.add(Entry(id="4.0", engine=ANY, parameter="view_transform", value="aces", unit="", name="View transform",
                     order=4, **said))
    ledger.add(Entry(id="5.0", engine="redshift", parameter="max_secondary_ray_intensity", value=7, unit="", scope="hero",
                     name="Max secondary ray intensity", order=5, **said))  # a long name: elided, never pushing values out
    return ledger.currents(candidates=True)


def _shown(panel, column: int) -> str:
    return [panel.current.index(r, column).data() for r in range(panel.current.rowCount())]


def test_a_narrow_window_keeps_the_decision_and_the_file_in_view(qtbot):
    panel = SettingsPanel()
    qtbot.addWidget(panel)
    panel.resize(1200, 500)
    panel.show()
    qtbot.waitExposed(panel)
    panel.show_current(_rows())
    assert not any(panel.table.isColumnHidden(c) for c in range(len(CURRENT_COLUMNS)))
    assert "Brute-force rays" in _shown(panel, 1) and "ACES" in _shown(panel, VALUE_COLUMN)

    panel.resize(400, 500)
    qtbot.waitUntil(lambda: panel.table.isColumnHidden(0), timeout=5_000)
    assert all(panel.table.isColumnHidden(c) for c in WIDE_ONLY_COLUMNS)
    assert "Redshift Brute-force rays" in _shown(panel, 1)  # the engine in front of the name
    assert "Light temperature (key)" in _shown(panel, 1)  # render-wide engines add nothing
    view = panel.table.viewport().width()
    for col in (1, VALUE_COLUMN, 3):  # the setting, the decision and the file's value all fit
        right = panel.table.columnViewportPosition(col) + panel.table.columnWidth(col)
        assert right <= view, (CURRENT_COLUMNS[col], right, view)
    assert "512 ≠" in _shown(panel, 3)
    long = _shown(panel, 1).index("Redshift Max secondary ray intensity (hero)")
    assert panel.current.index(long, 1).data(Qt.ItemDataRole.ToolTipRole).startswith(
        "Redshift Max secondary ray intensity (hero)\n")  # whole in its tooltip
    # and whole on screen: a long name wraps onto more lines instead of losing the light's name
    assert panel.table.rowHeight(long) > panel.table.rowHeight(_shown(panel, 1).index("View transform"))

    panel.resize(1200, 500)
    qtbot.waitUntil(lambda: not panel.table.isColumnHidden(0), timeout=5_000)
    assert "Brute-force rays" in _shown(panel, 1)
    last = len(CURRENT_COLUMNS) - 1  # the last column fills the table again, as before it was narrow
    qtbot.waitUntil(lambda: panel.table.columnViewportPosition(last) + panel.table.columnWidth(last)
                    == panel.table.viewport().width(), timeout=5_000)


def test_a_setting_to_confirm_keeps_its_name_readable_beside_a_dcc(qtbot):
    """"128 or 192 or 256 — to confirm" on one line took half of a 400-px table and left the setting's
    name as "Light tem…ure": narrow, the words go under the values."""
    ledger = Ledger()
    said = dict(status="applied", ts_ms=1_764_000_000_000, domain="optimization", name="Brute-force rays")
    ledger.add(Entry(id="1.0", engine="redshift", parameter="brute_force_rays", value=256, unit="", order=1,
                     source_id="m1", **said))
    for n, value in ((2, 128), (3, 192)):
        ledger.add(Entry(id=f"{n}.0", engine="redshift", parameter="brute_force_rays", value=value, unit="", order=3,
                         source_id="m3", sure=False, **{**said, "ts_ms": 1_764_000_100_000}))
    ledger.add(Entry(id="4.0", engine=ANY, parameter="light_temperature", value=5600, unit="K", scope="key",
                     name="Light temperature", order=4, source_id="m4", status="applied", ts_ms=1_764_000_200_000))
    panel = SettingsPanel()
    qtbot.addWidget(panel)
    panel.resize(400, 500)
    panel.show()
    qtbot.waitExposed(panel)
    panel.show_current(ledger.currents())
    qtbot.waitUntil(lambda: panel.table.isColumnHidden(0), timeout=5_000)
    row = _shown(panel, 1).index("Redshift Brute-force rays")
    assert panel.current.index(row, VALUE_COLUMN).data() == "128 or 192 or 256\nto confirm"
    fm = panel.table.fontMetrics()
    qtbot.waitUntil(lambda: panel.table.columnWidth(1) >= fm.horizontalAdvance("Light temperature"), timeout=5_000)
    panel.resize(1200, 500)
    qtbot.waitUntil(lambda: not panel.table.isColumnHidden(0), timeout=5_000)
    assert panel.current.index(row, VALUE_COLUMN).data() == "128 or 192 or 256 — to confirm"
