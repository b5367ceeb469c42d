"""The desktop app's UI thread (issue 6): the longest stall while Kelvin works.

A probe on the UI thread — a precise ``QTimer`` every 5 ms — records how late each tick comes
(the gap between ticks minus the interval, on ``time.perf_counter``): a late tick is time in which
the window could not have painted or taken a key. The real ``MainWindow`` (offscreen, with the
stylesheet) runs on real services (``app.ui.app.start_services``, what the app's start-up worker
runs: ``build_services`` with the VRAM guard off, then ``gc.freeze()``; embedder ``none``) over a
store of 100,000 messages, in phases:

* **idle** — nothing happens (the baseline; the window's own timers still run);
* **streaming** — replies streamed at 50 tokens/s by the Ollama-protocol test server, run in a
  *separate process* (its threads would otherwise share this process's GIL), under a transcript of
  earlier turns, until each turn is committed and its settings chips are looked up;
* **search** — the memory browser: opened (all 100k listed), a query typed character by character
  with the debounce, filters switched, the table scrolled page by page so rows load lazily;
* **commits** — a background thread commits messages as fast as the writer takes them while the
  window sits on the chat, then the writer's idle upkeep (compaction) runs.

Per phase: the gaps' p50 / p99 / max, how many exceed 50 ms (the target is none), the ratio to the
idle baseline, the worst gaps with the step they happened in, and the garbage collector's pauses
over 5 ms (a collection holds the GIL, so it stalls the window from any thread).

Diagnosis: ``--stacks`` samples every thread's Python stack whenever a tick is 30 ms late (the
sampler thread costs a little); ``--slots`` times the window's UI-thread methods and lists calls
over 5 ms; ``--no-freeze`` undoes the start-up ``gc.freeze()`` (to see what it is worth);
``--no-quiet-collect`` leaves full collections to Python instead of the window's quiet moments
(``app.ui.quiet_collect``);
``--phases search`` runs one phase after the baseline.

The seeded store is built once through ``MemoryService.import_items`` (embedder ``none``; ~90 s for
100k) and kept in ``bench/results/ui-stall-store-<N>/`` (git-ignored, ``KELVIN_BENCH_CACHE`` moves
it, ``--fresh`` rebuilds it); every run works on a throw-away copy.

    python bench/ui_stall.py > bench/results/ui_stall.json      # ~3 min once the store is cached
    python bench/ui_stall.py --messages 2000 --turns 1 --history 3 --commits 300 --idle-s 2 --scroll-pages 5
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["QT_QPA_PLATFORM"] = "offscreen"

import numpy as np  # noqa: E402

import common as c  # noqa: E402

STALL_MS = 50.0
PROJECT = "bench"

# the Ollama-protocol test server in its own process, with scripted replies; it stops when stdin closes
SERVER = """
import json, sys
from tests.support.ollama_server import OllamaTestServer
replies = json.load(open(sys.argv[1], encoding="utf-8"))
with OllamaTestServer(delay_s=float(sys.argv[2])) as srv:
    for text in replies:
        srv.queue_reply(text)
    print(srv.host, flush=True)
    sys.stdin.read()
"""


# ---- the store -----------------------------------------------------------------------------------
def seeded_store(n: int, fresh: bool) -> tuple[Path, dict]:
    """A data folder holding project "bench" with ``n`` messages of ``scale_corpus``, built once."""
    cache = c.RESULTS / f"ui-stall-store-{n}"
    stamp = cache / "built.json"
    if fresh and cache.exists():
        shutil.rmtree(cache)
    if not stamp.exists():
        partial = cache.with_name(cache.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        per = min(100, n)
        msgs = c.scale_corpus(conversations=max(1, n // per), per_conversation=per)[:n]
        c.log(f"seeding {len(msgs):,} messages (once; cached in {cache}) …")
        t0 = time.perf_counter()
        svc = c.make_service(partial / "data", "none", project=PROJECT)
        try:
            svc.import_items(c.to_items(msgs, PROJECT))
            svc.maintain()
        finally:
            svc.close()
        info = {"messages": len(msgs), "seconds": round(time.perf_counter() - t0, 1),
                "app_sources": c.app_sources_hash(), "date_utc": c.machine_info()["date_utc"]}
        (partial / "built.json").write_text(json.dumps(info))
        shutil.rmtree(cache, ignore_errors=True)
        partial.rename(cache)
        c.log(f"seeded in {info['seconds']} s")
    return cache / "data", json.loads(stamp.read_text())


# ---- the replies -----------------------------------------------------------------------------------
def reply_text(rng: random.Random, words: int) -> str:
    """A Markdown answer of about ``words`` words: paragraphs, a list, a code block, bold names."""
    parts, count = [], 0
    while count < words:
        name, engine, _values, _unit, alt, problem, _para = rng.choice(c.PARAMS)
        kind = rng.random()
        if kind < 0.5:
            text = " ".join(t.format(name=f"**{name}**", alt=alt, problem=problem, engine_or=engine or "most engines")
                            for t in rng.sample(c.ASSISTANT, k=3))
        elif kind < 0.8:
            text = "\n".join(f"- **{p[0]}**: try {rng.choice(p[2])}{p[3]} against {p[5]}"
                             for p in rng.sample(c.PARAMS, k=4))
        else:
            text = "```text\n" + "\n".join(f"{p[0]:<24}{rng.choice(p[2])}{p[3]}" for p in rng.sample(c.PARAMS, k=4)) \
                   + "\n```"
        parts.append(text)
        count += len(text.split())
    return "\n\n".join(parts)


def start_server(replies: list[str], delay_s: float, folder: Path) -> tuple[subprocess.Popen, str]:
    path = folder / "replies.json"
    path.write_text(json.dumps(replies), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(path), str(delay_s)], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def stop_server(proc: subprocess.Popen) -> None:
    try:
        proc.stdin.close()
        proc.wait(timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()


# ---- the probe -------------------------------------------------------------------------------------
class Probe:
    """A 5 ms precise timer on the UI thread; each tick's lateness goes to the current phase."""

    def __init__(self, interval_ms: int):
        from PySide6.QtCore import Qt, QTimer

        self.interval = interval_ms / 1000
        self.phase: str | None = None
        self.step = ""
        self.gaps: dict[str, list[float]] = {}
        self.worst: dict[str, list[tuple[float, str, float]]] = {}
        self.started: dict[str, float] = {}
        self.seconds: dict[str, float] = {}
        self.last = time.perf_counter()
        self.gc_pauses: dict[str, list[tuple[float, int, str]]] = {}  # the collector holds the GIL: a stall too
        self._gc_start = 0.0
        gc.callbacks.append(self._gc)
        self.timer = QTimer(timerType=Qt.TimerType.PreciseTimer, interval=interval_ms)
        self.timer.timeout.connect(self._tick)
        self.timer.start()

    def _tick(self) -> None:
        now = time.perf_counter()
        gap = now - self.last - self.interval
        self.last = now
        if self.phase is not None:
            self.gaps[self.phase].append(gap)
            if gap * 1000 > 16:
                self.worst[self.phase].append((gap * 1000, self.step, now - self.started[self.phase]))

    def _gc(self, what: str, info: dict) -> None:
        if what == "start":
            self._gc_start = time.perf_counter()
        elif self.phase is not None and (took := time.perf_counter() - self._gc_start) > 0.005:
            self.gc_pauses[self.phase].append((round(took * 1000, 1), info["generation"],
                                               threading.current_thread().name))

    def begin(self, phase: str) -> None:
        self.gaps[phase], self.worst[phase], self.gc_pauses[phase] = [], [], []
        self.started[phase] = time.perf_counter()
        self.phase, self.step = phase, ""

    def end(self) -> None:
        self.seconds[self.phase] = time.perf_counter() - self.started[self.phase]
        self.phase = None

    def stop(self) -> None:
        self.timer.stop()
        gc.callbacks.remove(self._gc)


class StackSampler(threading.Thread):
    """``--stacks``: whenever the probe is 30 ms late, note the UI thread's Python stack."""

    def __init__(self, probe: Probe, ui_ident: int):
        super().__init__(name="bench-stack-sampler", daemon=True)
        self.probe, self.ui_ident = probe, ui_ident
        self.seen: Counter = Counter()
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(0.004):
            if self.probe.phase is None or time.perf_counter() - self.probe.last < 0.030 + self.probe.interval:
                continue
            frames = sys._current_frames()
            if self.ui_ident not in frames:
                continue
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in frames.items():  # the UI thread's stack, and where the others are
                if ident == threading.get_ident():
                    continue
                stack = traceback.extract_stack(frame)[-(8 if ident == self.ui_ident else 3):]
                where = " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(stack))
                who = "UI" if ident == self.ui_ident else names.get(ident, str(ident))
                self.seen[(self.probe.phase, self.probe.step, f"[{who}] {where}")] += 1

    def report(self, top: int = 25) -> list[dict]:
        return [{"phase": p, "step": s, "stack": w, "samples_4ms": n} for (p, s, w), n in self.seen.most_common(top)]


SLOTS = {"app.ui.memory_view": {"MessagesModel": ("set_ids", "fill", "data"), "MemoryView": ("show_results", "_changed")},
         "app.ui.chat_presenter": {"ChatPresenter": ("ask", "_find_chips")},
         "app.ui.memory_browser": {"MemoryBrowser": ("query", "_fetch_rows")},
         "app.ui.settings_view": {"SettingsPanel": ("show_current", "show_history")},
         "app.ui.main_window": {"MainWindow": ("attach", "show_view", "_written_elsewhere")},
         "app.ui.status_presenter": {"StatusPresenter": ("check_ollama",)},
         "app.ui.chat_view": {"ChatView": ("_render", "_draw_one", "append", "add", "add_from_elsewhere", "finish",
                                       "show_chips")}}


def time_slots(probe: Probe, over_ms: float = 5.0) -> list:
    """``--slots``: wrap the window's UI-thread methods; note each call over ``over_ms``."""
    import functools
    import importlib

    slow: list = []

    def wrap(cls, name):
        fn = getattr(cls, name)

        @functools.wraps(fn)
        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                took = (time.perf_counter() - t0) * 1000
                if took > over_ms and probe.phase is not None:
                    slow.append({"phase": probe.phase, "step": probe.step, "slot": f"{cls.__name__}.{name}",
                                 "ms": round(took, 1)})
        setattr(cls, name, timed)

    for module, classes in SLOTS.items():
        mod = importlib.import_module(module)
        for cls_name, names in classes.items():
            for name in names:
                wrap(getattr(mod, cls_name), name)
    return slow


# ---- driving the window from the UI thread ---------------------------------------------------------
def pump(seconds: float) -> None:
    """Run the event loop for a while (the probe keeps ticking)."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    QTimer.singleShot(max(0, int(seconds * 1000)), loop.quit)
    loop.exec()


def wait_until(pred, timeout_s: float = 120.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what or pred}")
        pump(0.02)


def window_idle(w) -> bool:
    return w.pools.busy() == 0 and not w.memory._debounce.isActive() and w.turns.turn is None


def phase_idle(probe: Probe, w, seconds: float) -> dict:
    probe.begin("idle")
    probe.step = "idle on the chat"
    pump(seconds)
    probe.end()
    return {}


def phase_streaming(probe: Probe, w, questions: list[str], reply_words: int) -> dict:
    probe.begin("streaming")
    turns = []
    for i, q in enumerate(questions):
        probe.step = f"turn {i + 1}: streaming"
        t0 = time.perf_counter()
        w.chat.composer.setPlainText(q)
        w.chat._submit()  # what Enter does
        wait_until(lambda: w.turns.turn is None, 300, "the reply")
        t_reply = time.perf_counter() - t0
        probe.step = f"turn {i + 1}: committing, chips"
        wait_until(lambda: window_idle(w), 120, "the turn's commit and chips")
        turns.append({"reply_s": round(t_reply, 2), "until_committed_s": round(time.perf_counter() - t0, 2),
                      "status": w.chat.entries[-1].status or "complete",
                      "streamed_chars": len(w.chat.entries[-1].text)})
        probe.step = f"turn {i + 1}: after"
        pump(1.0)
    probe.end()
    return {"turns": turns, "transcript_entries_at_end": len(w.chat.entries), "reply_words": reply_words}


def type_text(probe: Probe, w, text: str, char_s: float, word_pause_s: float) -> None:
    from PySide6.QtTest import QTest

    for ch in text:
        QTest.keyClicks(w.memory.search, ch)
        pump(word_pause_s if ch == " " else char_s)
    pump(word_pause_s)


def phase_search(probe: Probe, w, queries: list[str], scroll_pages: int) -> dict:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    m = w.memory
    probe.begin("search")
    out = {}
    probe.step = "open the browser: list everything"
    t0 = time.perf_counter()
    w.show_view(w.views.indexOf(m))
    wait_until(lambda: window_idle(w) and len(m.model.ids) > 0, 120, "the full list")
    out["list_all_s"] = round(time.perf_counter() - t0, 2)
    out["listed"] = len(m.model.ids)
    for q in queries:
        probe.step = f"typing {q!r}"
        m.search.setFocus()
        m.search.selectAll()
        QTest.keyClick(m.search, Qt.Key.Key_Backspace)
        type_text(probe, w, q, 0.11, 0.45)
        wait_until(lambda: window_idle(w), 60, "the search")
        out.setdefault("results", {})[q] = len(m.model.ids)
    for key, value in (("domain", "lighting"), ("engine", "octane"), ("type", "setting")):
        probe.step = f"filter {key}={value}"
        box = m.filters[key]
        box.setCurrentIndex(box.findData(value))
        box.activated.emit(box.currentIndex())
        wait_until(lambda: window_idle(w), 60, "the filtered search")
        pump(0.3)
    probe.step = "clear the query (filtered list)"
    m.search.selectAll()
    QTest.keyClick(m.search, Qt.Key.Key_Backspace)
    wait_until(lambda: window_idle(w), 60, "the filtered list")
    for box in m.filters.values():
        probe.step = "filters back to any"
        box.setCurrentIndex(0)
        box.activated.emit(0)
        wait_until(lambda: window_idle(w), 60, "the list")
    out["listed_at_end"] = len(m.model.ids)
    bar = m.table.verticalScrollBar()
    probe.step = "scroll page by page"
    for _ in range(scroll_pages):
        bar.setValue(bar.value() + bar.pageStep())
        pump(0.08)
    wait_until(lambda: window_idle(w), 60, "the rows")
    for where, value in (("scroll to the end", bar.maximum()), ("scroll to the middle", bar.maximum() // 2),
                         ("scroll to the top", 0)):
        probe.step = where
        bar.setValue(value)
        pump(0.3)
        wait_until(lambda: window_idle(w), 60, "the rows")
    out["rows_fetched"] = len(m.model.cache)
    probe.step = "back to the chat"
    w.show_view(0)
    pump(0.5)
    probe.end()
    return out


def phase_commits(probe: Probe, w, texts: list[str], settle_s: float) -> dict:
    memory = w.services.memory
    futures, go = [], threading.Event()

    def commit_all() -> None:
        go.wait()
        for i, text in enumerate(texts):
            futures.append(memory.commit(text, role="user" if i % 2 else "assistant", conversation_id="agent-log",
                                         project=PROJECT)[1])

    worker = threading.Thread(target=commit_all, name="bench-committer")
    worker.start()  # before the phase: starting a thread waits for it, which is the bench's cost, not Kelvin's
    probe.begin("commits")
    probe.step = "committing in the background"
    t0 = time.perf_counter()
    go.set()
    wait_until(lambda: not worker.is_alive() and all(f.done() for f in futures), 600, "the commits")
    took = time.perf_counter() - t0
    errors = sum(1 for f in futures if f.exception() is not None)
    probe.step = "writer idle (upkeep)"
    pump(settle_s)
    probe.end()
    return {"committed": len(futures), "failed": errors, "seconds": round(took, 2),
            "messages_per_s": round(len(futures) / took, 1)}


def summarise(probe: Probe, baseline: str = "idle") -> dict:
    out = {}
    base = None
    for phase, gaps in probe.gaps.items():
        a = np.asarray(gaps) * 1000
        s = {"seconds": round(probe.seconds[phase], 1), "ticks": int(a.size),
             "gap_ms": {"p50": round(float(np.percentile(a, 50)), 2), "p99": round(float(np.percentile(a, 99)), 2),
                        "max": round(float(a.max()), 1)},
             "over_50ms": int((a > STALL_MS).sum()), "over_16ms": int((a > 16.7).sum()),
             "gc_pauses_over_5ms": [{"ms": ms, "generation": g, "thread": t} for ms, g, t in probe.gc_pauses[phase]],
             "worst": [{"gap_ms": round(g, 1), "step": st, "at_s": round(t, 2)}
                       for g, st, t in sorted(probe.worst[phase], reverse=True)[:8]]}
        if phase == baseline:
            base = s
        out[phase] = s
    for s in out.values():
        s["ratio_to_idle"] = {k: round(s["gap_ms"][k] / max(base["gap_ms"][k], 0.01), 1) for k in ("p99", "max")}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=100_000, help="messages in the seeded store")
    ap.add_argument("--idle-s", type=float, default=10.0, help="length of the idle baseline")
    ap.add_argument("--turns", type=int, default=3, help="streamed turns")
    ap.add_argument("--reply-words", type=int, default=400, help="tokens per streamed reply")
    ap.add_argument("--tokens-per-s", type=float, default=50.0)
    ap.add_argument("--history", type=int, default=20, help="earlier turns already in the transcript")
    ap.add_argument("--scroll-pages", type=int, default=40)
    ap.add_argument("--commits", type=int, default=3000, help="messages committed in the background")
    ap.add_argument("--settle-s", type=float, default=4.0, help="probing after the commits (upkeep)")
    ap.add_argument("--interval-ms", type=int, default=5)
    ap.add_argument("--phases", default="streaming,search,commits",
                    help="which phases after the idle baseline, comma-separated")
    ap.add_argument("--stacks", action="store_true", help="sample the UI thread's stack during stalls")
    ap.add_argument("--slots", action="store_true", help="time the window's UI-thread slots (calls over 5 ms)")
    ap.add_argument("--fresh", action="store_true", help="rebuild the cached seeded store")
    ap.add_argument("--no-freeze", action="store_true", help="undo the start-up gc.freeze() (a comparison)")
    ap.add_argument("--no-quiet-collect", action="store_true",
                    help="leave full collections to Python, not the window's quiet moments (a comparison)")
    args = ap.parse_args()

    doc = {"benchmark": "ui_stall", "machine": c.machine_info(), "target_max_gap_ms": STALL_MS,
           "params": {k: v for k, v in vars(args).items() if k not in ("fresh",)}}
    seeded, built = seeded_store(args.messages, args.fresh)
    doc["store"] = {**built, "embedder": "none", "cache": str(seeded.parent)}
    work = Path(tempfile.mkdtemp(prefix="kelvin-bench-ui-stall-"))
    rng = random.Random(17)
    replies = [reply_text(rng, args.reply_words) for _ in range(args.turns)]
    server = None
    try:
        c.log("copying the seeded store to a throw-away folder …")
        shutil.copytree(seeded, work / "data")
        server, host = start_server(replies, 1 / args.tokens_per_s, work)
        c.log(f"test server (own process) on {host}, {args.tokens_per_s:g} tokens/s")

        from PySide6.QtWidgets import QApplication

        from app.config import load
        from app.ui.app import start_services, stylesheet, window_state
        from app.ui.main_window import MainWindow

        app = QApplication(sys.argv[:1])
        probe = Probe(args.interval_ms)
        slow_slots = time_slots(probe) if args.slots else None
        app.setStyleSheet(stylesheet())
        settings = load({"data_dir": str(work / "data"), "project": PROJECT, "embedder": "none",
                         "ollama_host": host, "vram_guard": False})
        window = MainWindow(settings, window_state())
        window.show()
        t0 = time.perf_counter()
        window.attach(start_services(settings))  # what the app's start-up worker runs (vram_guard off: no GPU)
        if args.no_freeze:
            gc.unfreeze()
        if args.no_quiet_collect:
            window.collector.stop()
        doc["services_start_s"] = round(time.perf_counter() - t0, 2)
        wait_until(lambda: not window.chat.composer.isReadOnly(), 60, "the project's transcript")
        history_rng = random.Random(3)
        questions = c.latency_queries(args.turns + args.history, seed=9)
        for q in questions[args.turns:]:  # a day's session already in the transcript (not measured)
            window.chat.add("user", q)
            window.chat.add("assistant", reply_text(history_rng, history_rng.randint(40, 250)))
        doc["transcript_entries_before"] = len(window.chat.entries)
        wait_until(lambda: window_idle(window), 60, "the window to settle")
        pump(2.0)

        sampler = None
        if args.stacks:
            sampler = StackSampler(probe, threading.get_ident())
            sampler.start()
        pump(0.5)
        phases = {}
        c.log(f"phase idle ({args.idle_s:g} s) …")
        phases["idle"] = phase_idle(probe, window, args.idle_s)
        wanted = args.phases.split(",")
        if "streaming" in wanted:
            c.log(f"phase streaming ({args.turns} turns of ~{args.reply_words} tokens) …")
            phases["streaming"] = phase_streaming(probe, window, questions[:args.turns], args.reply_words)
        if "search" in wanted:
            c.log("phase search (memory browser) …")
            queries = ["gi clamp 10", "fireflies in the glass kitchen"]
            phases["search"] = phase_search(probe, window, queries, args.scroll_pages)
        if "commits" in wanted:
            c.log(f"phase commits ({args.commits} in the background) …")
            texts = [m["text"] for m in c.scale_corpus(conversations=args.commits // 100 + 1, seed=23)[:args.commits]]
            phases["commits"] = phase_commits(probe, window, texts, args.settle_s)
        probe.stop()
        if sampler is not None:
            sampler.halt.set()
            sampler.join()
        c.log("closing the window (drains the writer) …")
        window.close()
        doc["stalls"] = summarise(probe)
        doc["window_full_collections"] = window.collector.collected
        doc["phases"] = phases
        if sampler is not None:
            doc["stall_stacks"] = sampler.report()
        if slow_slots is not None:
            doc["slow_slots"] = sorted(slow_slots, key=lambda x: -x["ms"])[:40]
        doc["target_met"] = {p: s["over_50ms"] == 0 for p, s in doc["stalls"].items()}
        for p, s in doc["stalls"].items():
            c.log(f"{p:>10}: max {s['gap_ms']['max']:7.1f} ms  p99 {s['gap_ms']['p99']:6.2f} ms  "
                  f"over 50 ms: {s['over_50ms']:3d}  ratio to idle (p99/max): {s['ratio_to_idle']['p99']}/"
                  f"{s['ratio_to_idle']['max']}  worst: {[(x['gap_ms'], x['step']) for x in s['worst'][:3]]}")
    finally:
        if server is not None:
            stop_server(server)
        shutil.rmtree(work, ignore_errors=True)
    c.emit(doc)


if __name__ == "__main__":
    main()
