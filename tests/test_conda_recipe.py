# SPDX-License-Identifier: BSD-3-Clause
"""The conda recipe's sources, without building (tests/test_conda.py checks the built packages):
recipe/meta.yaml is what scripts/conda_meta.py generates from recipe/recipe.yaml; rendered the
way conda-build renders it (Jinja, then YAML) for linux and win, online and offline, it declares
the same outputs, requirements, run_exports, skips and test files as recipe.yaml evaluated for
the same platform and variant; the recipe's version is VERSION and its ABI pin the SOVERSION's
precision; the generator refuses a key it has no rule for.
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


def _ns(platform, offline):
    """platform: linux, win (a native Windows build) or win-cross (win-64 from linux-64)."""
    win = platform.startswith("win")
    target = "win-64" if win else "linux-64"
    ns = {"win": win, "unix": not win, "linux": not win, "target_platform": target,
          "build_platform": "linux-64" if platform != "win" else "win-64",
          "python": "3.11", "hash": "h0", "build_number": 0}
    if offline:
        ns["pteron_offline"] = True
    return ns


def render_meta(platform, offline):
    """meta.yaml as conda-build reads it: Jinja with the selector names and variant keys, then
    `# [selector]` lines dropped unless true, then YAML."""
    env, ns = _stub_env(), _ns(platform, offline)
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


def render_v1(platform, offline):
    env, ns = _stub_env(), _ns(platform, offline)
    raw = yaml.safe_load(RECIPE.read_text())
    ns.update({k: str(v) for k, v in raw["context"].items()})
    return _v1_value(env, ns, raw)


def _skipped(v1_output, ns):
    skip = v1_output.get("build", {}).get("skip", [])
    env = _stub_env()
    return any(env.compile_expression(c)(**ns) for c in (skip if isinstance(skip, list)
                                                         else [skip]))


@pytest.mark.parametrize("platform", ["linux", "win", "win-cross"])
@pytest.mark.parametrize("offline", [False, True], ids=["conda-forge", "offline"])
def test_meta_yaml_declares_what_recipe_yaml_does(platform, offline):
    meta, v1 = render_meta(platform, offline), render_v1(platform, offline)
    assert meta["package"]["version"] == v1["recipe"]["version"]
    ns = _ns(platform, offline)
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


def test_offline_leaves_out_what_only_a_channel_provides():
    online = {o["name"]: o for o in render_meta("linux", False)["outputs"]}
    offline = {o["name"]: o for o in render_meta("linux", True)["outputs"]}
    assert "COMPILER(cxx)" in online["libpteron"]["requirements"]["build"]
    assert "python" in online["pteron"]["requirements"]["run"]
    assert not offline["libpteron"]["requirements"].get("build")
    # What stays offline: only the exact pin of libpteron.
    assert offline["pteron"]["requirements"]["run"] == ["PIN(libpteron,exact)"]


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
