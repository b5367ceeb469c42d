"""The command line: ``kelvin [--data-dir DIR] [--project NAME] {chat,doctor,project,memory,…} …``.

Same behaviour as the desktop app, over the same services. Expected problems (a missing file,
bad JSON, an unreachable Ollama, a locked or damaged store) are told in plain words on stderr
with a non-zero exit; a traceback means a bug.

Each command lives in its own module with its arguments (``add_parser``) and what it does:
``chat``, ``doctor``, ``project``, ``team``, ``render_settings`` (settings), ``memory``,
``brief``; ``scene`` and ``gpu`` too, whose arguments are declared here because their modules load
the scene readers and NVML (1-2 s), which a command that does not use them must not pay for.
This module assembles the parser, opens the services and dispatches.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from app import __version__
from app.cli import brief, chat, doctor, memory, project, render_settings, team
from app.cli.arguments import EXIT_ERROR, EXIT_OK, Expected, Usage, parser_of, seconds, with_help
from app.cli.console import Output, ReaderGone, reader_gone

log = logging.getLogger("kelvin")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kelvin", description="Kelvin: a memory-keeping companion for rendering artists.")
    p.add_argument("--version", action="version", version=f"kelvin {__version__}")
    p.add_argument("--data-dir", help="folder holding all projects (default: see README)")
    p.add_argument("--project", help="project to work in (default: setting 'project')")
    p.add_argument("-v", "--verbose", action="store_true", help="say more about what happens")
    p.add_argument("--self-test", action="store_true", help="check that every part of Kelvin loads and works "
                   "(headless; touches none of your data), print a report, exit 0 if all is well")
    sub = p.add_subparsers(dest="command")
    chat.add_parser(sub)
    sub.add_parser("app", help="open the desktop window (what bare `kelvin` does where there is a display)")
    sub.add_parser("info", help="where your data lives and the commands to start with")
    doctor.add_parser(sub)
    project.add_parser(sub)
    team.add_parser(sub)
    render_settings.add_parser(sub)
    _add_scene(sub)
    brief.add_parser(sub)
    _add_gpu(sub)
    memory.add_parser(sub)
    return with_help(p)


def _add_scene(sub) -> None:
    """``scene`` and its subcommands (app.cli.scene runs them)."""
    sc = sub.add_parser("scene", help="render settings read from the scene itself (Blender .blend files, USD stages "
                                      "from Houdini and any USD pipeline, or the scene format any DCC script can send)")
    scsub = sc.add_subparsers(dest="scene_command", required=True)
    si = scsub.add_parser("import", help="read a scene's render settings into the ledger (applied, from the scene)")
    si.add_argument("file", help="a .blend file, a .usd/.usda/.usdc stage, a scene-format .json file, or - for "
                                 "scene-format JSON on stdin")
    si.add_argument("--scene", default="", help="the scene inside the .blend, or the render settings prim of a USD "
                                                "stage (default: the one it was saved with / the stage names)")
    si.add_argument("--json", action="store_true", help="print JSON instead of text")
    sd = scsub.add_parser("diff", help="where the scene differs from what was decided (in conversation or by hand)")
    sd.add_argument("file", help="a .blend file, a .usd/.usda/.usdc stage, a scene-format .json file, or - for JSON "
                                 "on stdin")
    sd.add_argument("--scene", default="", help="the scene inside the .blend, or the render settings prim of a USD stage")
    sd.add_argument("--json", action="store_true", help="print JSON instead of text")
    sa = scsub.add_parser("addon", help="write Kelvin's Blender add-on as a zip to install from Blender's preferences")
    sa.add_argument("--out", default="kelvin_sync.zip", help="where to write the zip (default: ./kelvin_sync.zip)")


def _add_gpu(sub) -> None:
    """``gpu`` and its subcommands (app.cli.gpu runs them)."""
    gpu = sub.add_parser("gpu", help="the VRAM guard: GPU status, live watch, record and replay traces")
    gsub = gpu.add_subparsers(dest="gpu_command", required=True)
    gs = gsub.add_parser("status", help="one reading of the GPU, Kelvin's models, and what the guard would do")
    gs.add_argument("--json", action="store_true", help="print JSON instead of text")
    gw = gsub.add_parser("watch", help="live samples and the guard's decisions (only watching: unloads nothing)")
    gw.add_argument("--seconds", type=seconds, default=0, help="stop after this long (default: until Ctrl+C)")
    gr = gsub.add_parser("record", help="save real samples as a trace (JSON lines)")
    gr.add_argument("file", type=Path, help="the trace file to write (JSON lines)")
    gr.add_argument("--seconds", type=seconds, default=0, help="stop after this long (default: until Ctrl+C)")
    gp = gsub.add_parser("replay", help="run the real guard and its actions on a trace: Kelvin's own models on the "
                         "configured Ollama host are really unloaded where the trace calls for it")
    gp.add_argument("trace", type=Path, help="a trace file (JSON lines, as `gpu record` writes)")
    gp.add_argument("--json", action="store_true", help="one JSON line per event")
    gp.add_argument("--realtime", action="store_true", help="play the trace at its own pace")


def _gpu(args, settings) -> int:
    from app.cli import gpu as g

    if args.gpu_command == "status":
        return g.status(settings, args.json)
    if args.gpu_command == "watch":
        return g.watch(settings, args.seconds)
    if args.gpu_command == "record":
        return g.record(settings, args.file, args.seconds)
    return g.replay_trace(settings, args.trace, args.json, args.realtime)


def has_display() -> bool:
    """Whether a window can open here: always on Windows and macOS; on Linux an X or Wayland
    display, or a Qt platform chosen by hand (``QT_QPA_PLATFORM=offscreen`` for scripts)."""
    if sys.platform in ("win32", "darwin"):
        return True
    return any(os.environ.get(v) for v in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"))


def _welcome(settings, why: str = "") -> int:
    if why:
        print(f"kelvin: {why}; here is the terminal side instead.\n")
    print(f"Kelvin {__version__}")
    print(f"  data folder : {settings.data_path()}")
    print(f"  project     : {settings.project}")
    server = "Ollama" if settings.model_server == "ollama" else "model server"
    print(f"  {server:<12}: {settings.model_host} (chat model {settings.chat_model})")
    print(f"  embedder    : {settings.embedder}")
    print()
    print("Bare `kelvin` opens the desktop window. Everything also works from the terminal:")
    print("  kelvin chat                      talk to Kelvin (streamed; /help for commands)")
    print("  kelvin chat --once \"question\"    one answer, for scripts")
    print("  kelvin doctor                    check the model server, models, GPU and memory")
    print("  kelvin memory search \"GI clamp\"  search what Kelvin remembers")
    print("  kelvin gpu status                the GPU, Kelvin's models and the VRAM guard")
    return EXIT_OK


def _expected_problems() -> tuple[type[BaseException], ...]:
    """The problems told in plain words, not as a traceback. Imported only once something went
    wrong: their modules bring pyarrow and the Ollama client, which the window loads after its
    first paint."""
    from app.core.commands import CommandError
    from app.core.records import RecordError
    from app.core.render_settings.scene import SceneError
    from app.llm.errors import OllamaUnavailable
    from app.core.embedding import EmbedderUnavailable
    from app.memory.index import IndexError_
    from app.memory.journal import JournalError
    from app.durable import UnsafePath
    from app.services.importer import ImportProblem
    from app.config import ConfigError
    from app.memory.team_server import TeamServerError
    from app.services.team import SyncBusy

    return (RecordError, ImportProblem, ConfigError, JournalError, IndexError_, EmbedderUnavailable,
            OllamaUnavailable, CommandError, UnsafePath, SceneError, TeamServerError, SyncBusy, Expected)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:299] + "…"


def main(argv: list[str] | None = None) -> int:
    real = sys.stdout
    sys.stdout = Output(real) if real is not None and not isinstance(real, Output) else real
    try:
        return _main(argv)
    finally:
        sys.stdout = real


def _main(argv: list[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    from app.memory.project_lock import set_holder

    said = sys.argv[1:] if argv is None else argv
    set_holder(" ".join(["kelvin", *[a for a in said if not a.startswith("-")][:3]]))  # who holds a project's lock
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="kelvin: %(message)s")
    from app import config as config_mod

    service = None
    data_dir = None
    try:
        settings = config_mod.load({"data_dir": args.data_dir, "project": args.project})
        data_dir = settings.data_path()
        if data_dir.exists() and not data_dir.is_dir():  # `--data-dir /dev/null`, a file
            from app.problems import not_a_folder

            raise Expected(not_a_folder(data_dir))
        if args.self_test:
            from app import self_test

            return self_test.main(settings)
        if args.command == "info":
            return _welcome(settings)
        if args.command in (None, "app") and not has_display():
            _welcome(settings, "no display to open the window on (no DISPLAY or WAYLAND_DISPLAY)")
            return EXIT_OK if args.command is None else EXIT_ERROR
        from app.cli import terminal

        terminal.leave_on_quit_signals()
        if args.command == "doctor":
            return doctor.doctor(settings, args.json)
        if args.command == "scene" and args.scene_command == "addon":
            from app.cli import scene as scene_terminal

            return scene_terminal.addon(args.out)
        if args.command == "gpu":
            return _gpu(args, settings)
        if args.command in (None, "app"):
            from app.ui.app import main as open_app

            return open_app(settings)
        from app.services.memory import MemoryService

        service = MemoryService(settings)
        named = args.project if args.project is not None else settings.project  # the flag, or the setting
        if named != "default" and not project.may_create(args):
            project.require_known(service, named)
        if args.command == "chat":
            return chat.chat(args, settings, service)
        if args.command == "project":
            return project.project(args, service)
        if args.command == "settings":
            return render_settings.settings(args, service)
        if args.command == "team":
            return team.team(args, service)
        if args.command == "scene":
            from app.cli import scene as scene_terminal

            return scene_terminal.scene(args, settings, service)
        if args.command == "brief":
            return brief.brief(args, settings, service)
        return memory.memory(args, service)
    except ReaderGone:
        return reader_gone()
    except Usage as exc:
        parser_of(parser, args).error(str(exc))
    except _expected_problems() as exc:  # evaluated only when something was raised
        sys.stderr.write(f"kelvin: {exc}\n")
        return EXIT_ERROR
    except (OSError, RuntimeError) as exc:
        # a full disk, no permission, a read-only disk: its cause and its fix; else a damaged index
        from app.problems import explain

        log.debug("storage error", exc_info=True)
        said = explain(exc, data_dir)
        if said is None:
            said = (f"the search index could not be used ({_one_line(exc)}); `kelvin memory reindex` rebuilds it from "
                    "the journal" if isinstance(exc, RuntimeError) else f"the memory store could not be used: "
                    f"{_one_line(exc)}")
        sys.stderr.write(f"kelvin: {said}\n")
        return EXIT_ERROR
    except RecursionError:
        sys.stderr.write("kelvin: the input is nested too deeply to read (more than a thousand levels); nothing "
                         "was written\n")
        return EXIT_ERROR
    except KeyboardInterrupt as exc:
        from app.cli.terminal import Terminated

        why = f"stopped ({exc.name})" if isinstance(exc, Terminated) else "interrupted"
        try:
            sys.stderr.write(f"kelvin: {why}; everything already written is kept\n")
        except OSError:  # the terminal is gone (SIGHUP)
            pass
        return 128 + exc.signum if isinstance(exc, Terminated) else 130
    finally:
        if service is not None:
            service.close()
    return EXIT_OK
