"""Build Kelvin's self-contained folder app for the platform this runs on, and its package.

    python installer/build.py                 # dist/Kelvin/ (PyInstaller one-dir bundle)
    python installer/build.py --tarball       # Linux: + dist/kelvin-<version>-linux-<arch>.tar.gz
    python installer/build.py --installer     # Windows: + dist/Kelvin-<version>-setup.exe (Inno Setup 6)
    python installer/build.py --self-test     # then run the bundle's --self-test (exit 1 if it fails)

Run it with the Python environment Kelvin is installed in (``pip install -e '.[bundle]'``): the
bundle takes its libraries from there. Steps: stage the sources in the layout an installed Kelvin
has (build/stage/app, resources inside it as app/resources), draw the icons (build/icons), write
the Windows version resource, run PyInstaller on installer/kelvin.spec, then package. Prints what
it made and a JSON summary line (sizes in bytes, seconds) that bench/bundle.py reads.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSTALLER = ROOT / "installer"
WINDOWS = sys.platform == "win32"
BUILD, DIST = ROOT / "build", ROOT / "dist"  # --out DIR moves both (DIR/build, DIR/dist)
BUNDLE = DIST / "Kelvin"


def place(out: Path) -> None:
    global BUILD, DIST, BUNDLE
    BUILD, DIST = out / "build", out / "dist"
    BUNDLE = DIST / "Kelvin"


def version() -> str:
    """The version in pyproject.toml, which app/__init__.py must repeat."""
    v = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    init = (ROOT / "app" / "__init__.py").read_text(encoding="utf-8")
    if f'__version__ = "{v}"' not in init:
        sys.exit(f"build: pyproject.toml says version {v}, app/__init__.py says otherwise; make them agree")
    return v


def say(text: str) -> None:
    print(f"build: {text}", file=sys.stderr, flush=True)


def stage(target: Path | None = None) -> Path:
    """Kelvin's sources as ``pip install`` lays them out: resources/ becomes the package app.resources."""
    target = target or BUILD / "stage"
    shutil.rmtree(target, ignore_errors=True)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "app", target / "app", ignore=skip)
    shutil.copytree(ROOT / "resources", target / "app" / "resources", ignore=skip)
    return target


def windows_version_file(v: str) -> Path:
    """PyInstaller's VSVersionInfo for the .exe files (Explorer's Details tab)."""
    parts = tuple((list(map(int, v.split(".")[:3])) + [0, 0, 0])[:3]) + (0,)
    text = f"""VSVersionInfo(
  ffi=FixedFileInfo(filevers={parts}, prodvers={parts}, mask=0x3f, flags=0x0, OS=0x40004, fileType=0x1,
                    subtype=0x0, date=(0, 0)),
  kids=[StringFileInfo([StringTable('040904B0', [
      StringStruct('CompanyName', 'Kelvin'), StringStruct('FileDescription', 'Kelvin'),
      StringStruct('FileVersion', '{v}'), StringStruct('ProductName', 'Kelvin'),
      StringStruct('ProductVersion', '{v}'), StringStruct('OriginalFilename', 'Kelvin.exe')])]),
        VarFileInfo([VarStruct('Translation', [1033, 1200])])])
"""
    path = BUILD / "version_info.txt"
    path.write_text(text, encoding="utf-8")
    return path


def pyinstaller(clean: bool) -> None:
    try:
        import PyInstaller  # noqa: F401
    except ImportError:
        sys.exit("build: PyInstaller is not installed here; run: pip install -e '.[bundle]'")
    cmd = [sys.executable, "-m", "PyInstaller", str(INSTALLER / "kelvin.spec"), "--noconfirm", "--log-level", "WARN",
           "--distpath", str(DIST), "--workpath", str(BUILD / "pyinstaller")]
    if clean:
        cmd.append("--clean")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "KELVIN_BUILD_DIR": str(BUILD)}  # read by the spec
    subprocess.run(cmd, check=True, cwd=ROOT, env=env)


def executable(bundle: Path = BUNDLE, console: bool = True) -> Path:
    """The bundle's executable: on Windows the console twin for the terminal, Kelvin.exe for the window."""
    if WINDOWS:
        return bundle / ("kelvin-cli.exe" if console else "Kelvin.exe")
    return bundle / "kelvin"


def folder_size(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file() and not p.is_symlink()]
    return sum(p.stat().st_size for p in files), len(files)


def arch() -> str:
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())


def glibc_needed(bundle: Path) -> str:
    """The newest glibc symbol version any binary in the bundle asks for ("2.36"): the oldest Linux
    the bundle runs on. Read from the ELF files' version strings, so no binutils are needed."""
    newest = (0, 0)
    pattern = re.compile(rb"GLIBC_(\d+)\.(\d+)")
    for path in bundle.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        with path.open("rb") as f:
            if f.read(4) != b"\x7fELF":
                continue
            data = f.read()
        for m in pattern.finditer(data):
            newest = max(newest, (int(m.group(1)), int(m.group(2))))
    return f"{newest[0]}.{newest[1]}"


def tarball(v: str, icons: dict[str, Path], glibc: str, level: int = 6) -> Path:
    """dist/kelvin-<v>-linux-<arch>.tar.gz: the bundle, the menu entry, the icons, install.sh, and
    requires-glibc (the oldest glibc it runs on, checked by install.sh before it copies anything).
    ``level``: gzip's (6 for a release; 0 stores the files uncompressed in the same .tar.gz format — the test
    suite's build packs at 0: 557 MB, packed and unpacked in ~1 CPU-s each instead of ~7 and ~3 at 1)."""
    name = f"kelvin-{v}-linux-{arch()}"
    out = DIST / f"{name}.tar.gz"
    linux = INSTALLER / "linux"

    def mode(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    with tarfile.open(out, "w:gz", compresslevel=level) as tar:
        tar.add(BUNDLE, arcname=f"{name}/Kelvin", filter=mode)
        requires = BUILD / "requires-glibc"
        requires.write_text(glibc + "\n", encoding="utf-8")
        tar.add(requires, arcname=f"{name}/requires-glibc", filter=mode)
        for src, arc in ((linux / "install.sh", "install.sh"), (linux / "kelvin.desktop", "kelvin.desktop"),
                         (linux / "README.txt", "README.txt"), (icons["png"], "kelvin.png"), (icons["svg"], "kelvin.svg")):
            tar.add(src, arcname=f"{name}/{arc}", filter=mode)
    return out


def inno_setup(v: str, icons: dict[str, Path]) -> Path:
    iscc = shutil.which("ISCC") or shutil.which("iscc")
    for guess in (Path(os.environ.get("ProgramFiles(x86)", "")) / "Inno Setup 6" / "ISCC.exe",
                  Path(os.environ.get("LOCALAPPDATA", "")) / "Programs" / "Inno Setup 6" / "ISCC.exe"):
        if not iscc and guess.is_file():
            iscc = str(guess)
    if not iscc:
        sys.exit("build: Inno Setup 6 (ISCC.exe) not found; install it from jrsoftware.org, or put ISCC on PATH")
    subprocess.run([iscc, f"/DAppVersion={v}", f"/DSourceDir={BUNDLE}", f"/DIconFile={icons['ico']}",
                    f"/DOutputDir={DIST}", str(INSTALLER / "windows" / "kelvin.iss")], check=True)
    return DIST / f"Kelvin-{v}-setup.exe"


def self_test(exe: Path) -> float:
    """Run ``exe --self-test`` (its report goes straight through); seconds it took."""
    t0 = time.perf_counter()
    result = subprocess.run([str(exe), "--self-test"], cwd=exe.parent)
    took = time.perf_counter() - t0
    if result.returncode != 0:
        sys.exit(f"build: {exe} --self-test failed (exit {result.returncode})")
    return took


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tarball", action="store_true", help="Linux: pack the bundle with install.sh and the menu entry")
    ap.add_argument("--installer", action="store_true", help="Windows: wrap the bundle in an Inno Setup installer")
    ap.add_argument("--self-test", action="store_true", help="run the built bundle's --self-test")
    ap.add_argument("--pack-level", type=int, default=6, choices=range(0, 10), metavar="0-9",
                    help="gzip level of the tarball (default 6; 1 packs in a third of the time, a larger file; "
                         "0 stores the files uncompressed, for a local test)")
    ap.add_argument("--clean", action="store_true", help="let PyInstaller start from an empty cache")
    ap.add_argument("--out", type=Path, default=ROOT, help="put build/ and dist/ in this folder (default: the checkout)")
    args = ap.parse_args(argv)
    place(args.out.resolve())
    if args.tarball and not sys.platform.startswith("linux"):
        ap.error("--tarball is for Linux (on Windows use --installer)")
    if args.installer and not WINDOWS:
        ap.error("--installer needs Windows and Inno Setup; on Linux use --tarball")
    v = version()
    summary: dict = {"version": v, "platform": f"{platform.system()} {arch()}", "python": platform.python_version()}
    t0 = time.perf_counter()
    BUILD.mkdir(parents=True, exist_ok=True)
    say(f"staging Kelvin {v} …")
    stage()
    sys.path.insert(0, str(INSTALLER))
    import icons as icon_maker

    icons = icon_maker.make(BUILD / "icons")
    if WINDOWS:
        windows_version_file(v)
    say("running PyInstaller (a few minutes) …")
    pyinstaller(args.clean)
    summary["build_s"] = round(time.perf_counter() - t0, 1)
    size, files = folder_size(BUNDLE)
    summary["bundle"] = {"path": str(BUNDLE), "bytes": size, "files": files}
    say(f"bundle: {BUNDLE} ({size / 2**20:.0f} MiB in {files} files, {summary['build_s']:.0f} s)")
    if sys.platform.startswith("linux"):
        summary["requires_glibc"] = glibc_needed(BUNDLE)
        say(f"runs on Linux with glibc {summary['requires_glibc']} or newer (the build machine's libraries set this)")
    if args.tarball:
        t1 = time.perf_counter()
        out = tarball(v, icons, summary["requires_glibc"], args.pack_level)
        summary["tarball"] = {"path": str(out), "bytes": out.stat().st_size, "level": args.pack_level,
                              "pack_s": round(time.perf_counter() - t1, 1)}
        say(f"tarball: {out} ({out.stat().st_size / 2**20:.0f} MiB)")
    if args.installer:
        out = inno_setup(v, icons)
        summary["installer"] = {"path": str(out), "bytes": out.stat().st_size}
        say(f"installer: {out} ({out.stat().st_size / 2**20:.0f} MiB)")
    if args.self_test:
        summary["self_test_s"] = round(self_test(executable()), 2)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
