"""Train the scope model (issue 30, ``app/core/render_settings/scope_model.py``) and score it honestly.

Every value the extractor reads where an object could be meant (a light's, a camera's or an output's
parameter, an object the conversation named, "on/for the … frames") is recorded with its candidates
(``Extractor.scope_seen``). A candidate is right when it names the scope the labels give that value
(the same engine, parameter and value in that message; names folded by ``ledger_scoring.scope_of``).
Only the sets labelled with scopes teach (``lead2``, ``o`` … ``t``): in the older sets a value on the
wrong light is not wrong.

``--cv``: for each scoped set, a model trained on the others reads it; reported per set and pooled:
how often the chosen candidate is right (against the rules' choice, on the same readings), and the
ledger's current values through ``settings_extraction.run`` (with the shipped status and trust
models) with the rules alone and with the model. ``--write`` trains on every scoped set and stores
``resources/scope_model.json``. The third blind set (``u``, ``v``, ``w``) is never read here.

    python bench/train_scope.py --cv --write > bench/results/scope_cv.json
"""
from __future__ import annotations

import argparse
import json
from dataclasses import replace
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import settings_extraction as se  # noqa: E402
import train_trust as tt  # noqa: E402
from ledger_scoring import file_is_scoped, scope_of  # noqa: E402

from app.core.render_settings.extraction import Context  # noqa: E402
from app.core.render_settings.parameters import same_value  # noqa: E402
from app.core.render_settings.scope_model import ScopeModel  # noqa: E402
from app.services.memory import load_extractor, load_trust  # noqa: E402

OUT = ROOT / "resources" / "scope_model.json"


def _same(a, b) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and same_value(a, b))


def readings(extractor, sessions, finals) -> list[tuple[str, list[tuple[str, list[str], int]], int]]:
    """(set, [(scope, features, right?)], the rules' choice right?, the rules' choice) for every recorded reading whose
    value the labels have."""
    out = []
    for sid, rows in sessions.items():
        group = sid.split("/")[0]
        if not file_is_scoped(rows, finals.get(sid, [])):
            continue
        ctx = Context()
        for row in rows:
            extractor.scope_seen = []
            _, ctx = extractor.extract(row["text"], row["role"], ctx)
            seen, extractor.scope_seen = extractor.scope_seen, None
            for m, options, rule in seen:
                gold = {scope_of(m.parameter, g.get("scope")) for g in row.get("expected", [])
                        if (g.get("engine") or "") == (m.engine or "") and g.get("parameter") == m.parameter
                        and _same(g.get("value"), m.value)}
                if not gold:
                    continue
                marked = [(s, f, int(scope_of(m.parameter, s) in gold)) for s, f in options]
                out.append((group, marked, int(scope_of(m.parameter, rule) in gold), rule))
    return out


def fit(rows) -> ScopeModel:
    flat = [(f, y) for _, marked, _, _ in rows for _, f, y in marked]
    return ScopeModel(weights=tt.fit(flat, l2=1e-3, epochs=500, min_count=3).weights)


def accuracy(model: ScopeModel, rows) -> dict:
    reach = [r for r in rows if any(y for _, _, y in r[1])]
    right = sum(next(y for s, f, y in marked if s == model.choose([(s, f) for s, f, _ in marked], rule))
                for _, marked, _, rule in reach)
    rules = sum(r[2] for r in reach)
    return {"readings": len(rows), "reachable": len(reach), "model_right": right, "rules_right": rules,
            "model": round(right / max(1, len(reach)), 4), "rules": round(rules / max(1, len(reach)), 4)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=se.DATA)
    ap.add_argument("--cv", action="store_true")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--margin", type=float, default=0.0, help="how much better than the rules' reading a candidate "
                    "must score to win")
    args = ap.parse_args()
    sessions, finals = se.load(args.data)
    sessions = {k: v for k, v in sessions.items() if k.split("/")[0] not in se.BLIND}
    extractor, trust = load_extractor(), load_trust()
    extractor.scope_model = None  # the readings and the baseline: the rules alone
    rows = readings(extractor, sessions, finals)
    groups = sorted({r[0] for r in rows})
    doc = {"benchmark": "train_scope", "sets": groups, "readings": len(rows)}
    if args.cv:
        per, pooled_rules, pooled_model = {}, [], []
        for g in groups:
            model = replace(fit([r for r in rows if r[0] != g]), margin=args.margin)
            mine = {k: v for k, v in sessions.items() if k.split("/")[0] == g}
            extractor.scope_model = None
            q0, _, _ = se.run(extractor, mine, finals, trust=trust)
            extractor.scope_model = model
            q1, _, _ = se.run(extractor, mine, finals, trust=trust)
            extractor.scope_model = None
            per[g] = {"choice": accuracy(model, [r for r in rows if r[0] == g]),
                      "current_rules": {k: q0["current_values"][k] for k in ("tp", "fp", "fn", "precision", "recall")},
                      "current_model": {k: q1["current_values"][k] for k in ("tp", "fp", "fn", "precision", "recall")},
                      "shown_wrongly": [q0["turned_down_or_floated_shown_as_current"],
                                        q1["turned_down_or_floated_shown_as_current"]]}
            pooled_rules.append(q0["current_values"])
            pooled_model.append(q1["current_values"])
            print(g, json.dumps(per[g]), file=sys.stderr)

        def pool(qs):
            tp, fp, fn = (sum(q[k] for q in qs) for k in ("tp", "fp", "fn"))
            return {"tp": tp, "fp": fp, "fn": fn, "precision": round(tp / max(1, tp + fp), 4),
                    "recall": round(tp / max(1, tp + fn), 4)}
        right = sum(p["choice"]["model_right"] for p in per.values())
        rules = sum(p["choice"]["rules_right"] for p in per.values())
        reach = sum(p["choice"]["reachable"] for p in per.values())
        doc["cv"] = {"per_set": per, "pooled": {
            "choice_model": round(right / max(1, reach), 4), "choice_rules": round(rules / max(1, reach), 4),
            "reachable": reach, "current_rules": pool(pooled_rules), "current_model": pool(pooled_model),
            "shown_wrongly": [sum(p["shown_wrongly"][0] for p in per.values()),
                              sum(p["shown_wrongly"][1] for p in per.values())]}}
    if args.write:
        model = fit(rows)
        OUT.write_text(json.dumps({"about": "bench/train_scope.py: the scope model (issue 30)", "sets": groups,
                                   "margin": args.margin,
                                   "weights": dict(sorted(model.weights.items()))}, indent=0) + "\n")
        doc["written"] = str(OUT.relative_to(ROOT))
        doc["features"] = len(model.weights)
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
