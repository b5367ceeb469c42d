"""The format check an outside writer runs on a blind set before handing it over (BLIND-WRITER-BRIEF.md):

    python3 validate.py settings_labelled_x.jsonl

It checks the format only — keys, engines, parameters and their kinds and units against LABELLING.md
beside it, statuses (the assistant's at most proposed), scopes written lower case without "the", one
"final" row closing each session — never the writer's judgement. Standard library only: the writer has no Kelvin installed.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ENGINES = {"octane", "redshift", "arnold", "cycles", "vray", "karma", "corona"}


def parameter_keys(guide: str) -> dict[tuple[str, str], tuple[str, str, list[str]]]:
    """(engine or "any", key) → (kind, unit, enum values), read from the guide's parameter list."""
    keys = {}
    for m in re.finditer(r"^(\w+)\.(\w+): .*?\((\w+)(?:, unit ([^)]+))?\)(?: values: ([^#\n]*))?", guide, re.M):
        keys[(m[1], m[2])] = (m[3], (m[4] or "").strip(), [v.strip() for v in (m[5] or "").split(",") if v.strip()])
    return keys


def check_setting(s: dict, keys: dict, need_status: bool) -> list[str]:
    eng, par = s.get("engine"), s.get("parameter")
    problems = []
    if eng is not None and eng not in ENGINES:
        problems.append(f"unknown engine {eng!r}")
    key = ("any", par) if eng is None else (eng, par)
    if key not in keys:
        return problems + [f"unknown parameter {eng}.{par} (engine null for any.* keys)"]
    kind, unit, values = keys[key]
    v = s.get("value")
    if kind == "enum" and v is not None and not isinstance(v, list) and v not in values:
        problems.append(f"{par}: {v!r} not one of {values}")
    if kind == "bool" and v is not None and not isinstance(v, bool):
        problems.append(f"{par}: bool expected")
    if kind in ("int", "number") and v is not None and not isinstance(v, (int, float, list)):
        problems.append(f"{par}: number expected, got {v!r}")
    if s.get("unit", "") != unit:
        problems.append(f"{par}: unit should be {unit!r}")
    if need_status and s.get("status") not in ("applied", "proposed", "rejected"):
        problems.append(f"bad status {s.get('status')!r}")
    sc = s.get("scope")
    if sc is not None and (not isinstance(sc, str) or sc != sc.lower() or sc.startswith("the ")):
        problems.append(f'scope {sc!r}: lower case, no "the"')
    return problems


def main(path: str) -> int:
    keys = parameter_keys((Path(__file__).parent / "LABELLING.md").read_text(encoding="utf-8"))
    errors = 0
    sessions, finals = set(), set()

    def bad(n: int, msg: str) -> None:
        nonlocal errors
        errors += 1
        print(f"line {n}: {msg}")

    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            bad(n, f"not JSON: {exc}")
            continue
        sid = row.get("session")
        if not sid:
            bad(n, "no session")
            continue
        if "final" in row:
            if sid in finals:
                bad(n, f"second final row for {sid}")
            finals.add(sid)
            for s in row["final"]:
                for p in check_setting(s, keys, need_status=False):
                    bad(n, p)
            continue
        sessions.add(sid)
        if sid in finals:
            bad(n, f"message after the final row of {sid}")
        if row.get("role") not in ("user", "assistant") or not isinstance(row.get("text"), str):
            bad(n, "a message needs role user|assistant and text")
        for s in row.get("expected", []):
            for p in check_setting(s, keys, need_status=True):
                bad(n, p)
            if row.get("role") == "assistant" and s.get("status") != "proposed":
                bad(n, "assistant rows are at most proposed")
    for sid in sorted(sessions - finals):
        bad(0, f"session {sid} has no final row")
    print(f"{len(sessions)} sessions, {errors} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
