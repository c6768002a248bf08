# SPDX-License-Identifier: BSD-3-Clause
"""recipe/meta.yaml (conda-build's recipe format) generated from recipe/recipe.yaml (rattler-build's
v1 format, the one source). conda-build users and conda-forge's older tooling read meta.yaml;
rattler-build reads only recipe.yaml.

    python scripts/conda_meta.py          # writes recipe/meta.yaml
    python scripts/conda_meta.py --check  # exit 1 (and a diff) if meta.yaml is not current

What is translated, and how (the v1 form on the left):
  context: {k: v}                  {% set k = "v" %}
  source: url, sha256              source: url, sha256
  ${{ expr }}                      {{ expr }}
  pin_subpackage(n, upper_bound=p) pin_subpackage(n, max_pin=p)
  - if: C / then: [...] / else:    {% if C %} ... {% else %} ... {% endif %} (conda-build renders
                                   meta.yaml with Jinja, selector names such as `win` included)
  build: script: NAME              script: NAME.sh, or NAME.bat on Windows
  build: script: env: {K: V}       build: script_env: [K=V]
  build: skip: EXPR                build: skip: true  # [EXPR]
  dynamic_linking:                 build: binary_relocation
    binary_relocation
  requirements: run_exports        build: run_exports
  ignore_run_exports: from_package build: ignore_run_exports_from
  tests: (all of an output's)      test: (one block: imports, requires, files (recipe),
                                   source_files, commands; a package_contents test becomes
                                   `test -f` commands, or `if not exist` on Windows, in the one
                                   spelling a `win` / `unix` condition leaves; a `python` test
                                   its imports, and with pip_check, `pip` required and the
                                   command `python -m pip check`; a conditional test's entries
                                   sit in a Jinja block of its condition)
  about: homepage / documentation  about: home / doc_url / dev_url
         / repository
  extra: recipe-maintainers        extra: recipe-maintainers
Only the keys this recipe uses are known; any other is an error, so a new key in recipe.yaml
needs a rule here.
"""
import argparse
import difflib
import json
import re
import sys
from pathlib import Path

import yaml

RECIPE_DIR = Path(__file__).resolve().parent.parent / "recipe"

HEADER = """\
# SPDX-License-Identifier: BSD-3-Clause
# GENERATED from recipe.yaml by scripts/conda_meta.py: do not edit; edit recipe.yaml and run
#   python scripts/conda_meta.py
# This is conda-build's form of the recipe (conda-build renders it with Jinja first).
"""


class RecipeError(ValueError):
    pass


def expr(s):
    """A v1 string's Jinja expressions in conda-build's spelling."""
    s = s.replace("${{", "{{")
    return re.sub(r"(pin_subpackage\([^)]*?)upper_bound=", r"\1max_pin=", s)


def scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    s = expr(str(v))
    if s.startswith("{{") and s.endswith("}}"):
        return s
    if (re.search(r": |#|^[\[\]{}&*!|>'\"%@`,?-]|^\s|\s$", s) or s == ""
            or s.lower() in ("true", "false", "yes", "no", "null", "~")
            or re.fullmatch(r"[0-9.eE+-]+", s)):
        return json.dumps(s)
    return s


def only(d, keys, where):
    extra = set(d) - set(keys)
    if extra:
        raise RecipeError(f"{where}: no conda-build rule for key(s) {sorted(extra)}")


class Out:
    def __init__(self):
        self.lines = []

    def add(self, indent, text):
        self.lines.append(" " * indent + text)

    def items(self, indent, seq, where):
        """A YAML list at `indent`, with v1 if/then/else items as Jinja blocks."""
        for item in seq:
            if isinstance(item, dict) and "if" in item:
                only(item, ("if", "then", "else"), where)
                self.add(indent, "{% if " + item["if"] + " %}")
                self.items(indent, as_list(item["then"]), where)
                if "else" in item:
                    self.add(indent, "{% else %}")
                    self.items(indent, as_list(item["else"]), where)
                self.add(indent, "{% endif %}")
            elif isinstance(item, (dict, list)):
                raise RecipeError(f"{where}: a nested list item has no conda-build rule")
            else:
                self.add(indent, "- " + scalar(item))

    def block(self, indent, key, value, where):
        """key: value, or key: followed by an indented list or literal block."""
        if isinstance(value, list):
            self.add(indent, key + ":")
            self.items(indent + 2, value, f"{where}.{key}")
        elif isinstance(value, str) and "\n" in value:
            self.add(indent, key + ": |")
            for ln in value.rstrip("\n").split("\n"):
                if ln:
                    self.add(indent + 2, ln)
                else:
                    self.lines.append("")
        else:
            self.add(indent, f"{key}: {scalar(value)}")


def as_list(v):
    return v if isinstance(v, list) else [v]


def _contents_cmds(kind, item):
    """(windows, unix) test commands that a package_contents item is installed."""
    if kind == "lib":
        return (f'if not exist "%LIBRARY_BIN%\\{item}.dll" exit 1',
                f'test -f "$PREFIX/lib/lib{item}${{SHLIB_EXT}}"')
    if kind == "include":
        return (f'if not exist "%LIBRARY_INC%\\{item.replace("/", chr(92))}" exit 1',
                f'test -f "$PREFIX/include/{item}"')
    if kind == "bin":
        return (f'if not exist "%LIBRARY_BIN%\\{item}.exe" exit 1',
                f'test -f "$PREFIX/bin/{item}"')
    # files: paths (globs) relative to the prefix
    return (f'if not exist "%PREFIX%\\{item.replace("/", chr(92))}" exit 1',
            f'ls "$PREFIX"/{item} >/dev/null')


def contents_commands(out, pc, where):
    """A v1 package_contents test as conda-build test commands, each in its Windows and its
    unix spelling; the test's own conditions as Jinja blocks around them. Inside a `win` or
    `unix` condition (or its else) only the spelling of that platform is written."""
    only(pc, ("lib", "include", "files", "bin"), where)
    flip = {"win": "unix", "unix": "win"}

    def plain(kind, items, known=None):
        if not items:
            return
        cmds = [_contents_cmds(kind, i) for i in items]
        if known == "win":
            out.items(8, [w for w, _ in cmds], where)
        elif known == "unix":
            out.items(8, [u for _, u in cmds], where)
        else:
            out.add(8, "{% if win %}")
            out.items(8, [w for w, _ in cmds], where)
            out.add(8, "{% else %}")
            out.items(8, [u for _, u in cmds], where)
            out.add(8, "{% endif %}")

    for kind in ("lib", "include", "bin", "files"):
        run = []
        for item in pc.get(kind, []):
            if isinstance(item, dict):
                only(item, ("if", "then", "else"), where)
                plain(kind, run)
                run = []
                cond = item["if"].strip()
                known = cond if cond in flip else None
                out.add(8, "{% if " + item["if"] + " %}")
                plain(kind, as_list(item["then"]), known)
                if "else" in item:
                    out.add(8, "{% else %}")
                    plain(kind, as_list(item["else"]), flip.get(known))
                out.add(8, "{% endif %}")
            else:
                run.append(item)
        plain(kind, run)


def output(o, out):
    where = o.get("package", {}).get("name", "?")
    only(o, ("package", "build", "requirements", "tests"), where)
    only(o["package"], ("name",), where)
    out.add(2, "- name: " + scalar(o["package"]["name"]))
    b = dict(o.get("build", {}))
    only(b, ("script", "skip", "dynamic_linking"), where + ".build")
    dyn = b.get("dynamic_linking", {})
    only(dyn, ("binary_relocation",), where + ".build.dynamic_linking")
    script = b.get("script")
    env = {}
    if isinstance(script, dict):
        only(script, ("file", "env"), where + ".build.script")
        env = script.get("env", {})
        script = script["file"]
    if script and as_list(b.get("skip", [])) == ["win"]:
        out.add(4, f"script: {script}.sh")
    elif script:
        out.add(4, "{% if win %}")
        out.add(4, f"script: {script}.bat")
        out.add(4, "{% else %}")
        out.add(4, f"script: {script}.sh")
        out.add(4, "{% endif %}")
    req = dict(o.get("requirements", {}))
    only(req, ("build", "host", "run", "run_exports", "ignore_run_exports"), where)
    build_keys = []
    if "skip" in b:
        build_keys.append(("skip", None))
    if env:
        build_keys.append(("script_env", None))
    if "binary_relocation" in dyn:
        build_keys.append(("binary_relocation", None))
    if "run_exports" in req:
        build_keys.append(("run_exports", None))
    if "ignore_run_exports" in req:
        build_keys.append(("ignore_run_exports_from", None))
    if build_keys:
        out.add(4, "build:")
        if "skip" in b:
            for cond in as_list(b["skip"]):
                out.add(6, f"skip: true  # [{cond}]")
        if "binary_relocation" in dyn:
            out.add(6, f"binary_relocation: {scalar(dyn['binary_relocation'])}")
        if env:
            out.block(6, "script_env", [f"{k}={v}" for k, v in env.items()], where)
        if "run_exports" in req:
            out.block(6, "run_exports", req["run_exports"], where)
        if "ignore_run_exports" in req:
            ire = req["ignore_run_exports"]
            only(ire, ("from_package",), where)
            out.block(6, "ignore_run_exports_from", ire["from_package"], where)
    deps = [(k, req[k]) for k in ("build", "host", "run") if k in req]
    if deps:
        out.add(4, "requirements:")
        for k, v in deps:
            out.block(6, k, v, where + ".requirements")
    tests = o.get("tests", [])
    if tests:
        requires, files, source_files, commands, contents = [], [], [], [], []
        imports = []

        def wrap(cond, items):
            # A conditional test's items as one v1 conditional list item (Out.items renders it).
            return items if cond is None or not items else [{"if": cond, "then": items}]

        for t in tests:
            cond = None
            if "if" in t:  # - if: C / then: {a test}
                only(t, ("if", "then"), where + ".tests")
                cond, t = t["if"], t["then"]
            if "python" in t:
                only(t, ("python",), where + ".tests")
                py = t["python"]
                only(py, ("imports", "pip_check"), where + ".tests.python")
                imports += wrap(cond, as_list(py.get("imports", [])))
                if py.get("pip_check", True):
                    requires += wrap(cond, ["pip"])
                    commands += wrap(cond, ["python -m pip check"])
                continue
            if "package_contents" in t:
                only(t, ("package_contents",), where + ".tests")
                if cond is not None:
                    raise RecipeError(f"{where}.tests: a conditional package_contents test "
                                      "has no conda-build rule")
                contents.append(t["package_contents"])
                continue
            only(t, ("files", "requirements", "script"), where + ".tests")
            fs = t.get("files", {})
            only(fs, ("recipe", "source"), where + ".tests.files")
            files += wrap(cond, fs.get("recipe", []))
            source_files += wrap(cond, fs.get("source", []))
            r = t.get("requirements", {})
            only(r, ("run",), where + ".tests.requirements")
            requires += wrap(cond, r.get("run", []))
            commands += wrap(cond, as_list(t["script"]))
        out.add(4, "test:")
        if imports:
            out.block(6, "imports", imports, where + ".test")
        if requires:
            out.block(6, "requires", requires, where + ".test")
        if files:
            out.block(6, "files", files, where + ".test")
        if source_files:
            out.block(6, "source_files", source_files, where + ".test")
        out.add(6, "commands:")
        for pc in contents:
            contents_commands(out, pc, where + ".tests")
        out.items(8, commands, where)


def generate(recipe_text):
    r = yaml.safe_load(recipe_text)
    only(r, ("schema_version", "context", "recipe", "source", "build", "outputs", "about",
             "extra"), "recipe.yaml")
    if r.get("schema_version") != 1:
        raise RecipeError("recipe.yaml: schema_version 1 (rattler-build's v1 format) expected")
    out = Out()
    out.lines += HEADER.rstrip("\n").split("\n")
    for k, v in r.get("context", {}).items():
        out.add(0, "{% set " + k + " = " + json.dumps(str(v)) + " %}")
    out.add(0, "")
    only(r["recipe"], ("name", "version"), "recipe")
    out.add(0, "package:")
    out.add(2, "name: " + scalar(r["recipe"]["name"]))
    out.add(2, "version: " + scalar(r["recipe"]["version"]))
    out.add(0, "")
    src = r["source"]
    only(src, ("url", "sha256"), "source")
    out.add(0, "source:")
    out.add(2, "url: " + scalar(src["url"]))
    out.add(2, "sha256: " + scalar(src["sha256"]))
    out.add(0, "")
    only(r["build"], ("number",), "build")
    out.add(0, "build:")
    out.add(2, f"number: {r['build']['number']}")
    out.add(0, "")
    out.add(0, "outputs:")
    for o in r["outputs"]:
        output(o, out)
    out.add(0, "")
    about = r.get("about", {})
    keys = ("homepage", "license", "license_file", "summary", "description", "documentation",
            "repository")
    only(about, keys, "about")
    out.add(0, "about:")
    names = {"homepage": "home", "documentation": "doc_url", "repository": "dev_url"}
    for k in keys:
        if k in about:
            out.block(2, names.get(k, k), about[k], "about")
    extra = r.get("extra", {})
    if extra:
        only(extra, ("recipe-maintainers",), "extra")
        out.add(0, "")
        out.add(0, "extra:")
        out.block(2, "recipe-maintainers", extra["recipe-maintainers"], "extra")
    return "\n".join(out.lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="do not write; exit 1 with a diff if recipe/meta.yaml is not current")
    ap.add_argument("--recipe-dir", type=Path, default=RECIPE_DIR)
    a = ap.parse_args(argv)
    src = a.recipe_dir / "recipe.yaml"
    dst = a.recipe_dir / "meta.yaml"
    try:
        text = generate(src.read_text(encoding="utf-8"))
    except KeyError as e:
        print(f"conda_meta: {src}: required key {e} is missing", file=sys.stderr)
        return 2
    except (OSError, yaml.YAMLError, RecipeError, TypeError, AttributeError) as e:
        # AttributeError / TypeError: a section of the wrong kind (a list item that is not a
        # mapping, ...).
        print(f"conda_meta: {src}: {type(e).__name__}: {e} (is every section the kind "
              "recipe.yaml's v1 format gives it?)", file=sys.stderr)
        return 2
    if a.check:
        old = dst.read_text(encoding="utf-8") if dst.exists() else ""
        if old != text:
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), text.splitlines(True), str(dst), "regenerated"))
            print(f"conda_meta: {dst} is not current: run python scripts/conda_meta.py",
                  file=sys.stderr)
            return 1
        print(f"conda_meta: {dst} is current")
        return 0
    dst.write_text(text, encoding="utf-8")
    print(f"conda_meta: wrote {dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
