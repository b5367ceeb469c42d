"""Train the trust model (issue 30, ``app/core/render_settings/trust.py``) and score it honestly.

The trust model answers, for each value the ledger would state as current, how likely it is to be
the value really in use; under its threshold the ledger asks instead ("Still 128 for brute-force
rays?"). Its training rows must look like what it will meet: values read by a status model that never
saw the messages. So, for each labelled set ``g`` (``lead`` and the ``heldout`` files as one, as in
``train_status.py``):

1. a status model is trained on every other set (``train_status.fit``; cached in ``--cache``);
2. set ``g`` goes through the real extractor (with that model) and the real ledger, session by
   session; each current value the ledger states becomes a row: ``trust.features`` and whether it
   matches the session's ``final`` row (``ledger_scoring``: the same matching as the bench);
3. ``--cv``: for each set, a trust model trained on the other sets' rows reads it through the real
   ledger, scored by ``settings_extraction.run``; pooled, at every threshold of ``--thresholds``.

``--write`` trains on every row and stores the model, with the threshold chosen on the held-out
readings (the lowest whose pooled current-value precision reaches ``--precision``; else the best
F1 with precision first), in ``resources/trust_model.json``. The second blind set
(``r``, ``s``, ``t``) is never read here.

    python bench/train_trust.py --cv --write > bench/results/trust_cv.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import replace
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import settings_extraction as se  # noqa: E402
import train_status as ts  # noqa: E402
from ledger_scoring import file_is_scoped, matches, mention_key, norm_value, scope_of  # noqa: E402

from app.core.render_settings.extraction import Context  # noqa: E402
from app.core.render_settings.ledger import Ledger  # noqa: E402
from app.core.render_settings.status_model import StatusModel  # noqa: E402
from app.core.render_settings.trust import TrustModel, features  # noqa: E402

STATUS = ROOT / "resources" / "status_model.json"
OUT = ROOT / "resources" / "trust_model.json"


def status_folds(extractor, sessions, cache: Path) -> dict[str, dict]:
    """group → status-model weights trained without it (cached by the training rows' digest)."""
    rows = ts.rows_of(extractor, sessions) + ts.matrix_rows(extractor)
    digest = hashlib.sha256(json.dumps([(g, sorted(f), y) for g, f, y in rows]).encode()).hexdigest()[:16]
    cache.mkdir(parents=True, exist_ok=True)
    out = {}
    for g in sorted({g for g, _, _ in rows} - {"matrix"}):
        path = cache / f"status-{digest}-{g}.json"
        if not path.exists():
            print(f"status fold {g}", file=sys.stderr)
            path.write_text(json.dumps(ts.fit([r for r in rows if r[0] != g])))
        out[g] = json.loads(path.read_text())
    return out


def scope_models(extractor, sessions, finals) -> dict[str, object]:
    """group → the scope model trained without it (``train_scope.py``), when one ships; {} otherwise."""
    import train_scope as tsc

    shipped = extractor.scope_model
    if shipped is None:
        return {}
    extractor.scope_model = None
    readings = [(ts.group_of(f"{r[0]}/"), *r[1:]) for r in tsc.readings(extractor, sessions, finals)]
    extractor.scope_model = shipped
    return {g: replace(tsc.fit([r for r in readings if r[0] != g]), margin=shipped.margin)
            for g in {ts.group_of(k) for k in sessions}}


def trust_rows(extractor, sessions, finals) -> list[tuple[list[str], int]]:
    """(features, right?) for every value the ledger states at the end of each session."""
    out = []
    for sid, rows in sessions.items():
        scoped = file_is_scoped(rows, finals.get(sid, []))
        ctx, ledger = Context(), Ledger()
        for i, row in enumerate(rows):
            got, ctx = extractor.extract(row["text"], row["role"], ctx)
            for n, m in enumerate(got):
                ledger.add(se.to_entry(m, i, n))
        want = [mention_key({**f, "status": ""}, with_scope=scoped) for f in finals.get(sid, [])]
        for cur in ledger.currents():
            if cur.unsure or cur.decision is None:
                continue
            d = cur.decision
            have = (d.engine, d.parameter, norm_value(d.value), "", scope_of(d.parameter, d.scope) if scoped else "")
            siblings = {s: ledger.history(d.engine, d.parameter, s) for (e, p, s) in ledger.keys()
                        if (e, p) == (d.engine, d.parameter) and s != d.scope}
            out.append((features(d, ledger.history(*d.key), siblings, cur.changed),
                        int(any(matches(have, w) for w in want))))
    return out


def fit(rows: list[tuple[list[str], int]], l2: float = 3e-3, epochs: int = 600, lr: float = 0.05,
        min_count: int = 3) -> TrustModel:
    counts = Counter(f for fs, _ in rows for f in set(fs))
    vocab = {f: i for i, f in enumerate(sorted(f for f, c in counts.items() if c >= min_count))}
    X = np.zeros((len(rows), len(vocab)))
    for r, (fs, _) in enumerate(rows):
        for f in fs:
            if f in vocab:
                X[r, vocab[f]] = 1.0
    y = np.array([lab for _, lab in rows], dtype=float)
    w = np.zeros(len(vocab))
    m1, m2 = np.zeros_like(w), np.zeros_like(w)
    for t in range(1, epochs + 1):
        p = 1 / (1 + np.exp(-np.clip(X @ w, -40, 40)))
        grad = X.T @ (p - y) / len(rows) + l2 * w
        m1 = 0.9 * m1 + 0.1 * grad
        m2 = 0.999 * m2 + 0.001 * grad * grad
        w -= lr * (m1 / (1 - 0.9 ** t)) / (np.sqrt(m2 / (1 - 0.999 ** t)) + 1e-8)
    return TrustModel(weights={f: round(float(w[i]), 4) for f, i in vocab.items() if abs(w[i]) >= 1e-3})


def choose(runs: list[dict], precision: float, kept: float) -> dict | None:
    """The threshold, from the held-out readings: the highest recall whose pooled current-value precision
    reaches ``precision``; else the most precise one that keeps ``kept`` of the recall without a gate."""
    if not runs:
        return None
    def cur(r):
        return r["pooled"]["current_values"]
    sure = [r for r in runs if cur(r)["precision"] >= precision]
    if sure:
        return {**max(sure, key=lambda r: cur(r)["recall"]), "why": f"the highest recall with precision >= {precision}"}
    base = next((cur(r)["recall"] for r in runs if r["threshold"] == 0.0), max(cur(r)["recall"] for r in runs))
    keep = [r for r in runs if cur(r)["recall"] >= kept * base]
    return {**max(keep, key=lambda r: cur(r)["precision"]),
            "why": f"no threshold reaches precision {precision}: the most precise keeping {kept:.0%} of the recall"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=se.DATA)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/kelvin-train-cache"))
    ap.add_argument("--cv", action="store_true")
    ap.add_argument("--scoped", action="store_true", help="learn from sessions labelled with scopes only: in the "
                    "older sets a value on the wrong light is not wrong (they have no scopes), which teaches the gate "
                    "that an unscoped value beside scoped ones is fine")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--precision", type=float, default=0.97)
    ap.add_argument("--kept", type=float, default=0.9, help="without the precision: the most precise threshold that "
                    "keeps this share of the recall without a gate")
    ap.add_argument("--thresholds", type=float, nargs="*", default=[0.0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9])
    ap.add_argument("--threshold", type=float, default=None, help="write this threshold instead of the chosen one")
    args = ap.parse_args()
    extractor = se.load_extractor(se.load_taxonomy())
    shipped = json.loads(STATUS.read_text())
    sure, doubt = float(shipped.get("sure", 0.6)), float(shipped.get("doubt", 1.0))
    sessions, finals = se.load(args.data)
    sessions = {k: v for k, v in sessions.items() if k.split("/")[0] not in se.BLIND}
    folds = status_folds(extractor, sessions, args.cache)
    if args.scoped:  # the gate learns from (and is scored on) sessions labelled with scopes only
        sessions = {k: v for k, v in sessions.items() if file_is_scoped(v, finals.get(k, []))}
        folds = {g: w for g, w in folds.items() if any(ts.group_of(k) == g for k in sessions)}
    scope_folds = scope_models(extractor, sessions, finals)
    rows: dict[str, list] = {}
    for g, weights in folds.items():
        extractor.status_model = StatusModel.from_json({"weights": weights, "sure": sure, "doubt": doubt})
        extractor.scope_model = scope_folds.get(g, extractor.scope_model)
        mine = {k: v for k, v in sessions.items() if ts.group_of(k) == g}
        rows[g] = trust_rows(extractor, mine, finals)
    doc: dict = {"rows": sum(len(r) for r in rows.values()),
                 "right": sum(lab for r in rows.values() for _, lab in r), "groups": sorted(rows)}
    if args.cv:
        by_threshold = {}
        models = {g: fit([r for h, rs in rows.items() if h != g for r in rs]) for g in rows}
        for th in args.thresholds:
            qs = {}
            for g, weights in folds.items():
                extractor.status_model = StatusModel.from_json({"weights": weights, "sure": sure, "doubt": doubt})
                extractor.scope_model = scope_folds.get(g, extractor.scope_model)
                mine = {k: v for k, v in sessions.items() if ts.group_of(k) == g}
                trust = TrustModel(models[g].weights, models[g].bias, th)
                qs[g], _, _ = se.run(extractor, mine, finals, trust=trust)
            by_threshold[str(th)] = {"threshold": th, "pooled": ts.pool(list(qs.values())),
                                     "per_set": {g: ts.brief(q) for g, q in qs.items()}}
            print(f"threshold {th}: {by_threshold[str(th)]['pooled']['current_values']}", file=sys.stderr)
        doc["cv"] = by_threshold
    if args.write:
        best = choose(list(doc.get("cv", {}).values()), args.precision, args.kept)
        threshold = args.threshold if args.threshold is not None else best["threshold"] if best else 0.5
        model = fit([r for rs in rows.values() for r in rs])
        OUT.write_text(json.dumps({"about": "whether a decided value may be stated (issue 30): bench/train_trust.py "
                                   "--cv --write", "threshold": threshold, "bias": model.bias, "rows": doc["rows"],
                                   "weights": model.weights}, indent=0, sort_keys=True) + "\n", encoding="utf-8")
        doc["written"] = {"threshold": threshold, "why": "--threshold" if args.threshold is not None
                          else best.get("why") if best else "no --cv",
                          "features": len(model.weights)}
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
