"""Bring the labelled sets to the settled convention for changes told with their old value.

bench/data/LABELLING.md (issue 24): in "was 25, now 10", "from 2000 to 4000", "8 -> 4", "old value
10, new value 6" the old value is **applied** (history, labelled before the new value), and
**rejected** only when the message says it was bad. The writers of the sets had each chosen their
own way (`h`, `i`: applied; `e`, `f`, `j`: rejected; `k`, `m`: not labelled). This finds each such
change in a user message — the new value labelled applied, the old value said right before it with
"from … to", "was … now", an arrow or "old value … new value" — and labels the old value by the
convention. A message that also complains (a word from COMPLAINTS) keeps the labeller's choice, or,
where the labeller left the old value out, has it labelled rejected.

    .venv/bin/python bench/relabel_old_values.py            # report what would change
    .venv/bin/python bench/relabel_old_values.py --write    # and change the files
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
_NUM = r"[-+]?\d+(?:[.,]\d+)?(?:x\d+)?"
_CHANGE = re.compile(
    rf"(?:\bfrom\s+(?P<a1>{_NUM})\s*\S{{0,3}}\s+(?:down\s+|up\s+|back\s+)?to\s+(?P<b1>{_NUM}))"
    rf"|(?:\bwas\s+(?:on\s+|at\s+)?(?P<a2>{_NUM})\s*\S{{0,3}}[,;]?\s+(?:and\s+)?(?:is\s+)?now\s+(?:on\s+|at\s+)?(?P<b2>{_NUM}))"
    rf"|(?:(?P<a3>{_NUM})\s*\S{{0,3}}\s*(?:->|→|=>)\s*(?P<b3>{_NUM}))"
    rf"|(?:\bold(?:\s+value)?\s*:?\s*(?P<a4>{_NUM})[,;]?\s+new(?:\s+value)?\s*:?\s*(?P<b4>{_NUM}))",
    re.IGNORECASE)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from app.services.memory import load_cues  # noqa: E402

COMPLAINTS = load_cues().old_value_bad  # the rules' own list (resources/phrases/turned_down.toml)


def _number(text: str):
    t = text.replace(",", ".") if text.count(",") == 1 and len(text.split(",")[1]) != 3 else text.replace(",", "")
    if "x" in t:
        return t
    try:
        v = float(t)
    except ValueError:
        return None
    return int(v) if v == int(v) and "." not in t else v


def _same(a, b) -> bool:
    if isinstance(a, bool) != isinstance(b, bool):
        return False  # True is not 1
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and not isinstance(b, bool):
        return abs(float(a) - float(b)) < 1e-9
    return a == b


def relabel(row: dict) -> tuple[dict, list[str]]:
    """The row under the convention, and what changed (in words)."""
    if row.get("role") != "user" or "expected" not in row:
        return row, []
    text = row["text"]
    complains = any(c in text.lower() for c in COMPLAINTS)
    expected = list(row["expected"])
    changes = []
    for m in _CHANGE.finditer(text):
        a = _number(next(g for g in (m.group("a1"), m.group("a2"), m.group("a3"), m.group("a4")) if g))
        b = _number(next(g for g in (m.group("b1"), m.group("b2"), m.group("b3"), m.group("b4")) if g))
        if a is None or b is None or _same(a, b):
            continue
        new = [e for e in expected if e["status"] == "applied" and _same(e["value"], b)]
        if len(new) != 1:
            continue  # the new value is not one labelled setting: leave the row alone
        key = (new[0]["engine"], new[0]["parameter"])
        old = [e for e in expected if (e["engine"], e["parameter"]) == key and _same(e["value"], a)]
        if old and (old[0]["status"] == "applied" or complains):
            continue  # already by the convention, or said to be bad: the labeller's choice stands
        if old and old[0]["status"] == "proposed":
            continue
        status = "rejected" if complains and not old else "applied"  # "too blue, so … from 7500K to 6000K"
        entry = dict(new[0], value=a, status=status)
        if old:
            expected.remove(old[0])
            changes.append(f"{key[1]} {a}: {old[0]['status']} -> {status}")
        else:
            changes.append(f"{key[1]} {a}: unlabelled -> {status}")
        expected.insert(expected.index(new[0]), entry)
    for e in [e for e in expected if e["status"] == "applied" and isinstance(e["value"], str)]:
        spec = _enums().get((e["engine"] or "", e["parameter"]))
        if spec is None or e["value"] not in spec.values:
            continue
        low = " " + " ".join(t for t, _ in _tokens(text)) + " "
        for value, says in spec.values.items():
            if value == e["value"]:
                continue
            olds = {value.replace("_", " "), *says}
            news = {e["value"].replace("_", " "), *spec.values[e["value"]]}
            if not any(f" from {o} to {n} " in low or f" {o} -> {n} " in low for o in olds for n in news):
                continue
            old = [x for x in expected if (x["engine"], x["parameter"]) == (e["engine"], e["parameter"])
                   and x["value"] == value]
            if old and (old[0]["status"] in ("applied", "proposed") or complains):
                continue
            status = "rejected" if complains and not old else "applied"
            if old:
                expected.remove(old[0])
            changes.append(f"{e['parameter']} {value}: {old[0]['status'] if old else 'unlabelled'} -> {status}")
            expected.insert(expected.index(e), dict(e, value=value, status=status))
    return ({**row, "expected": expected} if changes else row), changes


_ENUMS: dict = {}


def _enums() -> dict:
    """The shipped catalogue's enum parameters, by (engine, key)."""
    if not _ENUMS:
        from app.services.memory import load_extractor

        _ENUMS.update({k: s for k, s in load_extractor().cat.specs.items() if s.kind == "enum"})
    return _ENUMS


def _tokens(text: str):
    from app.core.render_settings.parameters import tokens

    return tokens(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("files", nargs="*", type=Path)
    args = ap.parse_args()
    report = {}
    for path in args.files or sorted(DATA.glob("settings_labelled_*.jsonl")):
        rows, changed = [], []
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            new, what = relabel(row)
            rows.append(new)
            changed += [f"{row.get('session')}: {w}" for w in what]
        report[path.name] = {"changed": len(changed), "examples": changed[:5]}
        if args.write and changed:
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    json.dump(report, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
