"""Train the status model (issue 30) from the labelled sets, and score it honestly.

Every labelled session goes through the rule extractor in order (the rules alone, with the context
they carry); each (parameter, value) they read becomes one training row: its features
(``app.core.render_settings.status_model.features``) and its label — the status the labeller gave that parameter and
value in that message, or ``none`` when the labels have no such setting there. The generated plain
statements of every parameter (``tests/support/statement_matrix.py``, the test of issue 24) are
training rows too, in every fold (a group never scored). A multinomial logistic
regression (L2, full-batch Adam from zeros: deterministic) is fitted on those rows.

``--cv`` scores the model by **leave-one-set-out cross-validation**: for each labelled set (``lead``
and the ``heldout`` files count as one set, written by one person), a model trained on the other sets
reads it through the real extractor and ledger, and ``bench/ledger_scoring.py`` scores it; the
figures are pooled and given per set. The sure threshold is chosen on those held-out readings (the
lowest one whose pooled current-value precision reaches ``--precision``), never on the set being
scored alone. Without ``--cv`` the model is trained on every set and written to
``resources/status_model.json`` (with that threshold).

    python bench/train_status.py --cv > bench/results/status_cv.json
    python bench/train_status.py --write
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import settings_extraction as se  # noqa: E402
from ledger_scoring import mention_key  # noqa: E402

from app.core.render_settings import extraction as X  # noqa: E402
from app.core.render_settings.parameters import same_value  # noqa: E402
from app.core.render_settings.status_model import CLASSES, NONE, Sentence, StatusModel, features  # noqa: E402

OUT = ROOT / "resources" / "status_model.json"
sys.path.insert(0, str(ROOT))  # tests.support.statement_matrix: the generated plain statements


def group_of(sid: str) -> str:
    name = sid.split("/")[0]
    return "lead" if name.startswith(("lead", "heldout")) else name


def rows_of(extractor, sessions: dict) -> list[tuple[str, list[str], str]]:
    """(group, features, label) for every reading the rules make, in order."""
    out = []
    model, extractor.status_model = extractor.status_model, None
    extractor.guess = True
    try:
        for sid, rows in sessions.items():
            ctx = X.Context()
            for row in rows:
                text = X._layout(row["text"][:X.MAX_TEXT])
                sentences = [Sentence(x, extractor.cat) for x in X._sentences(extractor.cues, text)]
                before = ctx
                got, ctx = extractor.extract(row["text"], row["role"], ctx)
                labels = [mention_key(m, with_scope=False) for m in row.get("expected", [])]
                left = list(labels)
                for n, m in enumerate(got):
                    if m.candidate:
                        continue
                    label = _align(m, left)
                    out.append((group_of(sid), features(m, n, got, sentences, row["role"], before, extractor.cat),
                                label))
    finally:
        extractor.status_model = model
        extractor.guess = False
    return out


def matrix_rows(extractor) -> list[tuple[str, list[str], str]]:
    """The generated plain statements of every parameter (tests/support/statement_matrix.py, the
    project's own specification of the plain cases, issue 24) as training rows of a group of their own,
    "matrix": trained on in every fold, never scored as a held-out set."""
    from tests.support.statement_matrix import rows as statements

    out = []
    model, extractor.status_model = extractor.status_model, None
    extractor.guess = True
    try:
        for r in statements(extractor):
            ctx = X.Context(engine=r.engine)
            sentences = [Sentence(x, extractor.cat) for x in X._sentences(extractor.cues, X._layout(r.text))]
            got, _ = extractor.extract(r.text, r.role, ctx)
            left = [(w.engine or "", w.parameter, se.norm_value(w.value), w.status, "") for w in r.expected]
            for n, m in enumerate(got):
                if m.candidate:
                    continue
                label = _align(m, left)
                if label == NONE and r.unnamed_rejection and m.value is None and m.status == "rejected":
                    label = "rejected"  # "back to N" may turn down the value in use, unnamed
                out.append(("matrix", features(m, n, got, sentences, r.role, ctx, extractor.cat), label))
    finally:
        extractor.status_model = model
        extractor.guess = False
    return out


def _align(m, left: list[tuple]) -> str:
    """The labelled status of this (parameter, value) in the message (used up), else none. The rules'
    rejection of "the value in use" (no value: "that made it worse, back to 12") is the labeller's
    rejection of that setting whatever value the labeller wrote for it (they name it when they know it)."""
    same = [w for w in left if (w[0], w[1]) == (m.engine or "", m.parameter) and (
        (w[2] is None and m.value is None) or (w[2] is not None and m.value is not None and same_value(w[2], se.norm_value(
            list(m.value) if isinstance(m.value, tuple) else m.value))))]
    if not same and m.value is None and m.status == "rejected":
        same = [w for w in left if (w[0], w[1]) == (m.engine or "", m.parameter) and w[3] == "rejected"]
    if not same:
        return NONE
    hit = next((w for w in same if w[3] == m.status), same[0])
    left.remove(hit)
    return hit[3]


def fit(rows: list[tuple[str, list[str], str]], l2: float = 1e-3, epochs: int = 400, min_count: int = 2,
        lr: float = 0.05, weights: dict[str, float] | None = None) -> dict[str, list[float]]:
    """Softmax regression; ``weights``: how much a row of each label counts (rare labels up)."""
    counts = Counter(f for _, fs, _ in rows for f in set(fs))
    vocab = {f: i for i, f in enumerate(sorted(f for f, c in counts.items() if c >= min_count))}
    idx, ptr, y = [], [0], []
    for _, fs, label in rows:
        ids = sorted({vocab[f] for f in fs if f in vocab})
        idx += ids
        ptr.append(len(idx))
        y.append(CLASSES.index(label))
    idx_a, ptr_a, y_a = np.array(idx), np.array(ptr), np.array(y)
    n, k, d = len(rows), len(CLASSES), len(vocab)
    row_of = np.repeat(np.arange(n), np.diff(ptr_a))
    W = np.zeros((d, k))
    m1, m2 = np.zeros_like(W), np.zeros_like(W)
    onehot = np.eye(k)[y_a]
    wrow = np.array([weights.get(CLASSES[c], 1.0) for c in y_a]) if weights else np.ones(n)
    wrow = wrow / wrow.mean()
    for t in range(1, epochs + 1):
        z = np.stack([np.bincount(row_of, weights=W[idx_a, c], minlength=n) for c in range(k)], axis=1)
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        g_rows = (p - onehot) * (wrow / n)[:, None]
        g_nz = g_rows[row_of]
        grad = np.stack([np.bincount(idx_a, weights=g_nz[:, c], minlength=d) for c in range(k)], axis=1)
        grad += l2 * W
        m1 = 0.9 * m1 + 0.1 * grad
        m2 = 0.999 * m2 + 0.001 * grad * grad
        W -= lr * (m1 / (1 - 0.9 ** t)) / (np.sqrt(m2 / (1 - 0.999 ** t)) + 1e-8)
    return {f: [round(float(x), 4) for x in W[i]] for f, i in vocab.items() if np.abs(W[i]).max() >= 1e-3}


def evaluate(extractor, sessions, finals, weights, sure: float, doubt: float = 1.0) -> tuple[dict, dict]:
    extractor.status_model = StatusModel.from_json({"weights": weights, "sure": sure, "doubt": doubt})
    try:
        quality, _, by_file = se.run(extractor, sessions, finals)
    finally:
        extractor.status_model = None
    return quality, by_file


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=se.DATA)
    ap.add_argument("--cv", action="store_true", help="leave-one-set-out cross-validation")
    ap.add_argument("--write", action="store_true", help=f"train on every set and write {OUT.relative_to(ROOT)}")
    ap.add_argument("--precision", type=float, default=0.97, help="current-value precision the threshold aims at")
    ap.add_argument("--sure", type=float, nargs="*", default=[0.5, 0.6, 0.7, 0.8, 0.9])
    ap.add_argument("--doubt", type=float, nargs="*", default=[1.0])
    ap.add_argument("--recall", type=float, default=0.85, help="current-value recall the threshold must keep")
    args = ap.parse_args()
    extractor = se.load_extractor(se.load_taxonomy())
    extractor.status_model = None
    sessions, finals = se.load(args.data)
    sessions = {k: v for k, v in sessions.items() if k.split("/")[0] not in se.BLIND}
    rows = rows_of(extractor, sessions) + matrix_rows(extractor)
    groups = sorted({g for g, _, _ in rows} - {"matrix"})
    doc: dict = {"rows": len(rows), "labels": dict(Counter(label for _, _, label in rows)), "groups": groups}
    if args.cv:
        folds = {}
        for g in groups:
            print(f"fold {g}", file=sys.stderr)
            folds[g] = fit([r for r in rows if r[0] != g])
        by_sure = {}
        for sure in args.sure:
            for doubt in args.doubt:
                per_group, totals = {}, []
                for g in groups:
                    mine = {k: v for k, v in sessions.items() if group_of(k) == g}
                    quality, by_file = evaluate(extractor, mine, finals, folds[g], sure, doubt)
                    per_group[g] = quality
                    totals.append(quality)
                by_sure[f"{sure}/{doubt}"] = {"sure": sure, "doubt": doubt, "pooled": pool(totals),
                                              "per_set": {g: brief(q) for g, q in per_group.items()}}
        doc["cv"] = by_sure
    if args.write:
        best = choose(list(doc.get("cv", {}).values()), args.precision, args.recall)
        sure, doubt = (best["sure"], best["doubt"]) if best else (max(args.sure), min(args.doubt))
        doc["chosen"] = {"sure": sure, "doubt": doubt, "why": best.get("why") if best else "no --cv: the most careful"}
        weights = fit(rows)
        OUT.write_text(json.dumps({"about": "Kelvin's status model (issue 30): bench/train_status.py --cv --write",
                                   "classes": list(CLASSES), "sure": sure, "doubt": doubt, "trained_on": groups, "rows": len(rows),
                                   "weights": weights}, separators=(",", ":")) + "\n", encoding="utf-8")
        doc["written"] = {"path": str(OUT.relative_to(ROOT)), "features": len(weights), "sure": sure, "doubt": doubt}
    print(json.dumps(doc, indent=1))


def choose(runs: list[dict], precision: float, recall: float) -> dict | None:
    """The thresholds, from the held-out readings: the highest recall among those that reach the
    precision aimed at; else the highest precision among those that keep the recall; else the best F1."""
    def cur(v):
        return v["pooled"]["current_values"]
    for pick, why in ((lambda: max((v for v in runs if cur(v)["precision"] >= precision), key=lambda v: cur(v)["recall"]),
                       f"the highest recall with precision >= {precision}"),
                      (lambda: max((v for v in runs if cur(v)["recall"] >= recall), key=lambda v: cur(v)["precision"]),
                       f"no setting reaches precision {precision}: the highest precision with recall >= {recall}"),
                      (lambda: max(runs, key=lambda v: 2 * cur(v)["precision"] * cur(v)["recall"]
                                   / max(1e-9, cur(v)["precision"] + cur(v)["recall"])), "the best F1")):
        try:
            return {**pick(), "why": why}
        except ValueError:
            continue
    return None


def brief(q: dict) -> dict:
    return {**{st: [q["mentions_by_status"][st]["precision"], q["mentions_by_status"][st]["recall"]]
               for st in ("applied", "proposed", "rejected")},
            "current": [q["current_values"]["precision"], q["current_values"]["recall"], q["current_values"]["to_confirm"]],
            "shown_bad": q["turned_down_or_floated_shown_as_current"]}


def pool(qs: list[dict]) -> dict:
    def sums(get):
        tp = sum(get(q)["tp"] for q in qs)
        fp = sum(get(q)["fp"] for q in qs)
        fn = sum(get(q)["fn"] for q in qs)
        return {"precision": round(tp / max(1, tp + fp), 4), "recall": round(tp / max(1, tp + fn), 4)}
    return {**{st: sums(lambda q, st=st: q["mentions_by_status"][st]) for st in ("applied", "proposed", "rejected")},
            "current_values": {**sums(lambda q: q["current_values"]),
                               "to_confirm": sum(q["current_values"]["to_confirm"] for q in qs)},
            "turned_down_or_floated_shown_as_current": sum(q["turned_down_or_floated_shown_as_current"] for q in qs)}


if __name__ == "__main__":
    main()
