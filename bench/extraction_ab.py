"""The extractor of this checkout against the one of an earlier commit, in the same run (issue 35:
the phrase lists moved into data files must not slow extraction).

Both extractors read the same catalogue and status model; the earlier one is its module's source at
``--before`` (``git show REV:app/core/render_settings/extraction.py``), built with the arguments that source takes.
Every message of the labelled sets is extracted by each in turn, alternating by pass (A B A B …) so
load on the machine falls on both alike; p50/p95 per message and the ratio of the medians.

    python bench/extraction_ab.py --before main~1 --passes 6
"""
from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import common as c  # noqa: E402

from app.core.render_settings.extraction import Context  # noqa: E402
from app.services.memory import load_cues, load_extractor, load_taxonomy  # noqa: E402
from ledger_snapshot import labelled_sets  # noqa: E402


def earlier_extractor(rev: str, now):
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:app/core/render_settings/extraction.py"], check=True,
                            capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader("extraction_before", loader=None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    exec(compile(source, f"{rev}:app/core/render_settings/extraction.py", "exec"), module.__dict__)
    takes = inspect.signature(module.Extractor).parameters
    if "cues" in takes:
        return module.Extractor(now.cat, load_cues(), now.status_model)
    return module.Extractor(now.cat, now.status_model)


def per_message(extractor, texts: list[str]) -> list[float]:
    out = []
    for text in texts:
        t0 = time.perf_counter()
        extractor.extract(text, "user", Context())
        out.append((time.perf_counter() - t0) * 1000)
    return out


def stats(xs: list[float]) -> dict:
    xs = sorted(xs)
    return {"n": len(xs), "p50": round(statistics.median(xs), 4), "p95": round(xs[int(0.95 * (len(xs) - 1))], 4)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", default="main", help="the commit whose extractor is the baseline")
    ap.add_argument("--passes", type=int, default=6, help="passes over every message, per extractor")
    args = ap.parse_args()
    now = load_extractor(load_taxonomy())
    before = earlier_extractor(args.before, now)
    texts = [text for sessions in labelled_sets().values() for msgs in sessions.values() for text, _ in msgs]
    per_message(now, texts), per_message(before, texts)  # warm-up
    a: list[float] = []
    b: list[float] = []
    for n in range(args.passes):
        for which in ((before, a), (now, b)) if n % 2 == 0 else ((now, b), (before, a)):
            which[1].extend(per_message(which[0], texts))
    print(json.dumps({"benchmark": "extraction_ab", "machine": c.machine_info(), "before": args.before,
                      "messages": len(texts), "passes": args.passes, "before_ms": stats(a), "now_ms": stats(b),
                      "ratio_p50": round(statistics.median(b) / statistics.median(a), 3)}, indent=1))


if __name__ == "__main__":
    main()
