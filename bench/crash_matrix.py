"""The crash matrix (issue 19): kill -9 import, reindex, chat, brief, edit and delete at many
moments, start Kelvin again, and hold what it shows against the journal.

Every run starts from a copy of one store (``--base`` messages, imported with ``kelvin memory
import``). The operation runs as a fresh ``kelvin`` process — exactly as an artist runs it — and is
killed with SIGKILL either at a progress line it prints (import, reindex) or after a delay from a
schedule spread over the second half of its run (each operation is first timed once, unkilled). Then ``kelvin memory list --limit 0 --json`` and
``memory stats --json`` (the next start, which replays or finishes what the kill left) are held
against the journal, folded:

* **lost**: a message that was in the store before, was not deleted by the operation, and is no
  longer journaled; or one the operation said it had stored (the import's "imported", a reply's
  first words on screen) that is not journaled;
* **hidden**: journaled (and not deleted) but not listed, or not in the Markdown files;
* **duplicated**: an id added twice to the journal, listed twice, or with two Markdown blocks;
* **phantom**: listed but not journaled.

For import, the same file is then imported again: it must add exactly what was missing. The
brief must leave ``Master_Project_Brief.md`` either as it was or whole.

    python bench/crash_matrix.py > bench/results/crash_matrix.json
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import common as c

ROOT = c.ROOT


def kelvin(data: Path, *args, host: str = "http://127.0.0.1:9", timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=_env(data, host), capture_output=True,
                          text=True, timeout=timeout)


def _env(data: Path, host: str) -> dict:
    return {**os.environ, "KELVIN_DATA_DIR": str(data), "KELVIN_PROJECT": "crash", "KELVIN_EMBEDDER": "none",
            "KELVIN_OLLAMA_HOST": host, "KELVIN_VRAM_GUARD": "false"}


def rows(n: int, prefix: str, day: int = 1) -> list[dict]:
    return [{"id": f"{prefix}{i:05d}", "text": f"{prefix} note {i}: Octane GI clamp {i % 30} on shot {i // 40}, "
             "the fireflies in the glass are gone", "conversation_id": f"{prefix}{i // 40}",
             "timestamp": f"2026-11-{day + i // 2500:02d}T{9 + (i // 60) % 10:02d}:{i % 60:02d}:00Z"}
            for i in range(n)]


def write_jsonl(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    return path


# ---- what the store holds ----------------------------------------------------------------------------
def journal_state(folder: Path) -> tuple[set[str], Counter, set[str]]:
    """(live ids, how often each id was added, deleted ids) as the journal has them."""
    from app.memory.journal import Journal

    live: set[str] = set()
    adds: Counter = Counter()
    deleted: set[str] = set()
    for e in Journal(folder / "journal").read():
        mid = e.data.get("id")
        if e.op == "message.add":
            adds[mid] += 1
            live.add(mid)
        elif e.op == "message.restore":
            live.add(mid)
            deleted.discard(mid)
        elif e.op == "message.delete":
            live.discard(mid)
            deleted.add(mid)
    return live, adds, deleted


def markdown_ids(folder: Path) -> Counter:
    from app.memory.markdown import _BLOCK, unmarker

    out: Counter = Counter()
    for p in folder.rglob("*.md"):
        if p.name in ("settings.md", "Master_Project_Brief.md", "Project_Archive.md"):
            continue
        out.update(unmarker(b.group("id")) for b in _BLOCK.finditer(p.read_text(encoding="utf-8", errors="replace")))
    return out


def check(data: Path, before: set[str], promised: set[str], may_delete: set[str]) -> dict:
    """Start Kelvin again (list + stats) and hold it against the journal."""
    folder = data / "crash"
    listed_proc = kelvin(data, "memory", "list", "--limit", "0", "--json")
    stats_proc = kelvin(data, "memory", "stats", "--json")
    if listed_proc.returncode or stats_proc.returncode:
        return {"error": (listed_proc.stderr + stats_proc.stderr)[-500:]}
    listed = Counter(m["id"] for m in json.loads(listed_proc.stdout))
    stats = json.loads(stats_proc.stdout)
    live, adds, deleted = journal_state(folder)
    md = markdown_ids(folder)
    lost = {i for i in before if i not in live and not (i in deleted and i in may_delete)} | (promised - live)
    hidden = {i for i in live if i not in listed or i not in md}
    duplicated = {i for i, n in adds.items() if n > 1} | {i for i, n in listed.items() if n > 1} | \
                 {i for i, n in md.items() if n > 1}
    phantom = set(listed) - live
    return {"lost": sorted(lost), "hidden": sorted(hidden), "duplicated": sorted(duplicated),
            "phantom": sorted(phantom), "journaled": len(live), "listed": sum(listed.values()),
            "behind": stats.get("projections_behind"), "set_aside": len(stats.get("set_aside", []))}


# ---- killing -----------------------------------------------------------------------------------------
def run_and_kill(data: Path, args: list[str], host: str, *, at_line: int | None = None, prefix: str = "",
                 after_s: float | None = None, until: str = "") -> dict:
    """Start ``kelvin ARGS``; SIGKILL it at its ``at_line``-th stderr line starting with ``prefix``, or
    ``after_s`` seconds in. Returns what it printed and whether it was still running."""
    proc = subprocess.Popen([sys.executable, "-m", "app", *args], cwd=ROOT, env=_env(data, host),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.set_blocking(proc.stdout.fileno(), False)
    os.set_blocking(proc.stderr.fileno(), False)
    out, err = b"", b""
    start = time.monotonic()
    killed = False
    while proc.poll() is None:
        out += proc.stdout.read() or b""
        err += proc.stderr.read() or b""
        text = err.decode("utf-8", "replace")
        lines = [ln for ln in text.splitlines() if ln.startswith(prefix)] if at_line is not None else []
        if (at_line is not None and len(lines) >= at_line) or (after_s is not None and time.monotonic() - start >= after_s) \
                or (until and until in out.decode("utf-8", "replace")):
            proc.send_signal(signal.SIGKILL)
            killed = True
            break
        time.sleep(0.005)
    proc.wait()
    out += proc.stdout.read() or b""
    err += proc.stderr.read() or b""
    return {"killed": killed, "rc": proc.returncode, "stdout": out.decode("utf-8", "replace"),
            "stderr": err.decode("utf-8", "replace"), "elapsed_s": round(time.monotonic() - start, 3)}


def durations(base: Path, work: Path, hosts: dict[str, str], ops: dict[str, list[str]]) -> dict[str, float]:
    """How long each operation runs when nothing kills it (on a copy of the base store)."""
    out = {}
    for op, args in ops.items():
        data = work / f"timing-{op}"
        shutil.copytree(base, data)
        ran = run_and_kill(data, args, hosts.get(op, hosts["*"]))
        out[op] = ran["elapsed_s"]
        c.log(f"  {op:8} runs {out[op]:.2f} s (exit {ran['rc']})")
        shutil.rmtree(data, ignore_errors=True)
    return out


def matrix(base: Path, work: Path, hosts: dict[str, str], moments: int, extra: Path,
           extra_ids: set[str]) -> tuple[list, dict]:
    """``hosts``: the Ollama host per operation ("*": the rest)."""
    before = set(journal_state(base / "crash")[0])
    target = sorted(before)[len(before) // 2]
    brief_path = base / "crash" / "Master_Project_Brief.md"
    old_brief = brief_path.read_text(encoding="utf-8") if brief_path.exists() else None
    question = "what now for the glass, " + " ".join(f"step{i}" for i in range(60))
    ops = {"import": ["memory", "import", str(extra)], "reindex": ["memory", "reindex"],
           "chat": ["chat", "--once", question], "brief": ["brief"],
           "edit": ["memory", "edit", target, "--text", "Octane GI clamp 12, edited"],
           "delete": ["memory", "delete", target]}
    took = durations(base, work, hosts, ops)
    plans = []
    for op, args in ops.items():
        # moments spread over the second half of the run (the first is mostly start-up: ~1.2 s of imports),
        # the last one just before the end; import and reindex are also killed at each progress line
        span = took[op]
        for k in range(moments):
            plans.append((op, dict(args=list(args), after_s=span * (0.5 + 0.49 * k / max(1, moments - 1)))))
        if op in ("import", "reindex"):
            prefix = "imported " if op == "import" else "reindexed "
            for k in range(1, moments + 1):
                plans.append((op, dict(args=list(args), at_line=k, prefix=prefix)))
    results = []
    for n, (op, plan) in enumerate(plans):
        data = work / f"run{n}"
        shutil.copytree(base, data)
        ran = run_and_kill(data, plan.pop("args"), hosts.get(op, hosts["*"]), **plan)
        promised: set[str] = set()
        if op == "import" and "imported " in ran["stdout"]:
            promised = extra_ids  # the command said it was done
        moment = f"line {plan['at_line']}" if "at_line" in plan else f"{plan['after_s']:.2f} s"
        row = {"op": op, "moment": moment, **{k: ran[k] for k in ("killed", "rc", "elapsed_s")}}
        row.update(check(data, before, promised, {target} if op == "delete" else set()))
        if op == "chat" and ran["stdout"].strip():  # the reply began on screen: the question is journaled
            live, _adds, _ = journal_state(data / "crash")
            row["question_kept"] = bool(live - before)
            if not row["question_kept"]:
                row["lost"] = row.get("lost", []) + ["(the question)"]
        if op == "import":
            again = kelvin(data, "memory", "import", str(extra))
            live, adds, _ = journal_state(data / "crash")
            row["reimport_ok"] = again.returncode == 0 and extra_ids <= live and all(adds[i] == 1 for i in extra_ids)
        if op == "brief":
            now = data / "crash" / "Master_Project_Brief.md"
            now_text = now.read_text(encoding="utf-8") if now.exists() else None
            row["brief_written"] = now_text != old_brief
            row["brief_whole"] = now_text == old_brief or (now_text is not None and "## Current settings" in now_text)
        results.append(row)
        c.log(f"  {op:8} {moment:>9}: killed={row['killed']} lost={len(row.get('lost', []))} "
              f"hidden={len(row.get('hidden', []))} dup={len(row.get('duplicated', []))} "
              f"phantom={len(row.get('phantom', []))} {row.get('error', '')}")
        shutil.rmtree(data, ignore_errors=True)
    return results, took


def summarise(results: list[dict]) -> dict:
    out = {}
    for op in dict.fromkeys(r["op"] for r in results):
        rs = [r for r in results if r["op"] == op]
        out[op] = {"runs": len(rs), "killed_mid_run": sum(r["killed"] for r in rs),
                   "errors": sum("error" in r for r in rs),
                   **{k: sum(len(r.get(k, [])) for r in rs) for k in ("lost", "hidden", "duplicated", "phantom")}}
        if op == "import":
            out[op]["reimport_ok"] = sum(bool(r.get("reimport_ok")) for r in rs)
        if op == "brief":
            out[op]["brief_whole"] = sum(bool(r.get("brief_whole")) for r in rs)
            out[op]["brief_written_before_the_kill"] = sum(bool(r.get("brief_written")) for r in rs)
        if op == "chat":
            out[op]["reply_on_screen_question_kept"] = f"{sum(bool(r.get('question_kept')) for r in rs)}/" \
                                                       f"{sum('question_kept' in r for r in rs)}"
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", type=int, default=3000, help="messages in the store every run starts from")
    ap.add_argument("--extra", type=int, default=12_000, help="messages the killed import brings")
    ap.add_argument("--moments", type=int, default=10, help="kill moments per operation (and progress lines)")
    args = ap.parse_args()
    from tests.support.ollama_server import OllamaTestServer

    work = Path(tempfile.mkdtemp(prefix="kelvin-crash-matrix-"))
    doc: dict = {"machine": c.machine_info(), "params": vars(args)}
    try:
        base = work / "base"
        c.log(f"[crash] base store: {args.base:,} messages …")
        proc = kelvin(base, "memory", "import", str(write_jsonl(work / "base.jsonl", rows(args.base, "b"))))
        assert proc.returncode == 0, proc.stderr
        extra_rows = rows(args.extra, "x", day=10)
        extra = write_jsonl(work / "extra.jsonl", extra_rows)
        # a reply streams a word every 50 ms (a kill lands mid-reply); the brief's many calls get quick ones
        with OllamaTestServer(delay_s=0.05) as slow, OllamaTestServer(delay_s=0.0005) as quick:
            results, took = matrix(base, work, {"*": slow.host, "brief": quick.host}, args.moments, extra,
                                   {r["id"] for r in extra_rows})
        doc["run_time_s"] = took
        doc["summary"] = summarise(results)
        doc["totals"] = {k: sum(v[k] for v in doc["summary"].values()) for k in ("lost", "hidden", "duplicated",
                                                                                  "phantom", "errors")}
        doc["runs"] = results
    finally:
        shutil.rmtree(work, ignore_errors=True)
    c.emit(doc)


if __name__ == "__main__":
    main()
