"""Every labelled set's ledger, and every mention read on the way, as JSON: the guard of a change
to the extractor that must change nothing (issue 35: the phrase lists moved into data files).

For each ``bench/data/settings_labelled_*.jsonl`` session, the real extractor reads the messages in
order with the context it carries and the ledger takes what it reads, exactly as
``bench/settings_extraction.py`` does; the snapshot holds each message's mentions (every field,
those left out of equality too: the sentence, the guessed value, the confirmation) and the session's
final ledger (each current entry with status, value, scope and sure, the decision, the value to
confirm, the doubts). The generated statement matrix (``tests/support/statement_matrix.py``) is read
the same way, each row in its own conversation. Three readers: the shipped one (the rules and the
status model), the rules alone, and the rules offering loose values (how ``bench/train_status.py``
reads the sets to train the model).

    python bench/ledger_snapshot.py > /tmp/before.json   # before the change
    python bench/ledger_snapshot.py > /tmp/after.json    # after it
    cmp /tmp/before.json /tmp/after.json                 # identical: nothing changed

``--digest`` prints one SHA-256 per set instead of the whole snapshot (the sets' names are kept, so
a difference says where to look).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import asdict, fields
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import common  # noqa: E402,F401 — (no artist's config or environment is read)

from app.core.render_settings.extraction import Context  # noqa: E402
from app.core.render_settings.ledger import Entry, Ledger  # noqa: E402
from app.services.memory import load_extractor, load_taxonomy  # noqa: E402
from tests.support.statement_matrix import rows as matrix_rows  # noqa: E402

DATA = ROOT / "bench" / "data"


def _plain(value):
    """A value as JSON keeps it apart from others: a tuple as a list, a float with its type."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return {"float": repr(value)}
    return value


def _mention(m) -> dict:
    return {k: _plain(v) for k, v in asdict(m).items()}


def _entry(e: Entry | None) -> dict | None:
    if e is None:
        return None
    return {k: _plain(getattr(e, k)) for k in ("engine", "parameter", "scope", "status", "value", "unit", "sure",
                                                "name", "domain", "candidate", "id")}


def _ledger(ledger: Ledger) -> list[dict]:
    out = []
    for cur in ledger.currents(candidates=True):
        out.append({"entry": _entry(cur.entry), "decision": _entry(cur.decision), "previous": _entry(cur.previous),
                    "pending": _entry(cur.pending), "changed": cur.changed, "unsure": bool(getattr(cur, "unsure", False)),
                    "doubts": [_entry(d) for d in cur.doubts]})
    return out


def _to_entry(m, i: int, n: int) -> Entry:
    shared = {f.name for f in fields(Entry)} & {f.name for f in fields(m)}
    return Entry(id=f"{i}.{n}", ts_ms=i, order=i, **{k: getattr(m, k) for k in shared})


def _session(extractor, messages: list[tuple[str, str]], ctx: Context) -> dict:
    ledger = Ledger()
    said = []
    for i, (text, role) in enumerate(messages):
        got, ctx = extractor.extract(text, role, ctx)
        said.append([_mention(m) for m in got])
        for n, m in enumerate(got):
            ledger.add(_to_entry(m, i, n))
    return {"mentions": said, "ledger": _ledger(ledger), "engine": ctx.engine}


def labelled_sets() -> dict[str, dict[str, list[tuple[str, str]]]]:
    """Set name → session id → its messages (text, role), in the order the file gives them."""
    out: dict[str, dict[str, list[tuple[str, str]]]] = {}
    for path in sorted(DATA.glob("settings_labelled_*.jsonl")):
        name = path.name.removeprefix("settings_labelled_").removesuffix(".jsonl")
        sessions = out.setdefault(name, {})
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            if "final" not in row:
                sessions.setdefault(str(row["session"]), []).append((row["text"], row["role"]))
    return out


def snapshot(readers: tuple[str, ...] = ("shipped", "rules", "rules+guess")) -> dict:
    extractor = load_extractor(load_taxonomy())
    model = extractor.status_model
    sets = labelled_sets()
    matrix = matrix_rows(extractor)
    out: dict[str, dict] = {}
    for reader in readers:
        extractor.status_model = model if reader == "shipped" else None
        extractor.guess = reader == "rules+guess"
        for name, sessions in sets.items():
            out[f"{reader}/{name}"] = {sid: _session(extractor, msgs, Context()) for sid, msgs in sessions.items()}
        out[f"{reader}/matrix"] = {f"{n}:{r.template}:{r.spec[0]}.{r.spec[1]}":
                                   _session(extractor, [(r.text, r.role)], Context(engine=r.engine))
                                   for n, r in enumerate(matrix)}
    extractor.status_model, extractor.guess = model, False
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--digest", action="store_true", help="one SHA-256 per set instead of the whole snapshot")
    ap.add_argument("--readers", default="shipped,rules,rules+guess", help="which readers (comma-separated)")
    args = ap.parse_args()
    snap = snapshot(tuple(r.strip() for r in args.readers.split(",") if r.strip()))
    if args.digest:
        snap = {k: {"sessions": len(v), "sha256": hashlib.sha256(json.dumps(v, sort_keys=True).encode()).hexdigest()}
                for k, v in snap.items()}
    print(json.dumps(snap, indent=1, sort_keys=True, ensure_ascii=False))


if __name__ == "__main__":
    main()
