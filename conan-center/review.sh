#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# conan-center/review.sh - runs Conan Center's reviewers' tools on recipes/pteron, by hand:
#   - conan-io/hooks' conan-center.py (a Conan 1 hook): its pre_export and post_export checks
#     through `conan export` with Conan 1, and its post_package checks on a package folder
#     (PACKAGE, e.g. the one tests/test_conan_center.py's conan create made);
#   - conan-center-index's former recipe linter (linter/, removed there in 2024): pylint with
#     its plugins on the recipe and test_package, and its yaml linters.
# Neither tool is on PyPI and this project does not copy them: give checkouts of both
# repositories (HOOKS at f94db78, the hook's last commit before its deprecation notice, which
# breaks it; CCI at 61274b9, the linter's last complete state). The Python tools come from PyPI
# into $CACHE (conan<2 for the hook; pylint 2.14 and conan 2.7.1, as conan-center-index's CI
# ran the linter, for PYTHON38, a Python 3.8: on a newer Python astroid 2.11 reports false
# errors).
#
#   conan-center/review.sh HOOKS CCI [PACKAGE]
set -euo pipefail
HOOKS="$1" CCI="$2" PACKAGE="${3:-}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${PTERON_REVIEW_CACHE:-$HOME/.cache/pteron/conan-center-review}"
PYTHON38="${PYTHON38:-python3.8}"
mkdir -p "$CACHE"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ ! -x "$CACHE/conan1/bin/conan" ]; then
  python3 -m venv "$CACHE/conan1"
  "$CACHE/conan1/bin/pip" install -q --disable-pip-version-check "conan<2" pyyaml
fi
if [ ! -x "$CACHE/linter/bin/pylint" ]; then
  "$PYTHON38" -m venv "$CACHE/linter"
  "$CACHE/linter/bin/pip" install -q --disable-pip-version-check "pylint==2.14.*" \
    "conan==2.7.1" yamllint strictyaml
fi

echo "==> the hook: pre_export, post_export (conan export with Conan 1)"
export CONAN_USER_HOME="$work/conan1"
"$CACHE/conan1/bin/conan" config init >/dev/null
mkdir -p "$CONAN_USER_HOME/.conan/hooks"
cp "$HOOKS/hooks/conan-center.py" "$CONAN_USER_HOME/.conan/hooks/"
"$CACHE/conan1/bin/conan" config set hooks.conan-center
cp -r "$HERE/recipes/pteron" "$work/recipe"
rm -rf "$work/recipe/all/test_package/build"
# Conan 1 refuses to load a recipe that asks for Conan 2; nothing else changes.
sed -i 's/^required_conan_version = .*/required_conan_version = ">=1.60"/' "$work/recipe/all/conanfile.py"
version="$(python3 -c "import yaml,sys; print(next(iter(yaml.safe_load(open(sys.argv[1]))['versions'])))" "$HERE/recipes/pteron/config.yml")"
(cd "$work/recipe/all" && "$CACHE/conan1/bin/conan" export . "pteron/$version@") 2>&1 |
  grep '\[HOOK' || true

if [ -n "$PACKAGE" ]; then
  [ -d "$PACKAGE/lib" ] || { echo "no package in $PACKAGE" >&2; exit 2; }
  echo "==> the hook: post_package on $PACKAGE"
  # (a file, not stdin: the hook reads the source of package_id())
  cat > "$work/post_package.py" <<'EOF'
import importlib.util, sys, types
from conans.client.output import ConanOutput
hook_path, package_folder, version, recipe = sys.argv[1:5]
spec = importlib.util.spec_from_file_location("cc_hook", hook_path)
hook = importlib.util.module_from_spec(spec)
sys.modules["cc_hook"] = hook
spec.loader.exec_module(hook)

class Settings:
    def __init__(self, d): self.d = d
    def get_safe(self, k): return self.d.get(k)
    @property
    def values(self): return types.SimpleNamespace(fields=list(self.d))

class Options:
    def __init__(self): self.d = {}
    def get_safe(self, k): return None
    def items(self): return self.d.items()
    def __contains__(self, k): return False
    @property
    def values(self): return types.SimpleNamespace(as_list=lambda: [])

def package_id():
    pass

# What post_package reads of a Conan 1 conanfile; pteron's package is shared libraries only.
conanfile = types.SimpleNamespace(
    name="pteron", version=version, package_folder=package_folder, package_id=package_id,
    settings=Settings({"os": "Linux", "arch": "x86_64", "compiler": "gcc", "build_type": "Release"}),
    options=Options(), deps_cpp_info=types.SimpleNamespace(system_libs=[], frameworks=[]),
    cpp=types.SimpleNamespace(package=types.SimpleNamespace(libdirs=["lib"], bindirs=["bin"])))
hook.post_package(ConanOutput(sys.stdout, sys.stderr, color=False), conanfile=conanfile,
                  conanfile_path=recipe)
EOF
  "$CACHE/conan1/bin/python" "$work/post_package.py" "$HOOKS/hooks/conan-center.py" "$PACKAGE" \
    "$version" "$HERE/recipes/pteron/all/conanfile.py"
fi

echo "==> the linter (pylint with conan-center-index's plugins, yaml linters)"
mkdir -p "$work/cci/recipes"
cp -r "$CCI/linter" "$work/cci/"
cp -r "$HERE/recipes/pteron" "$work/cci/recipes/"
rm -rf "$work/cci/recipes/pteron/all/test_package/build"
cd "$work/cci"
export PYTHONPATH="$work/cci"
rc=0
"$CACHE/linter/bin/pylint" --rcfile=linter/pylintrc_recipe --output-format=parseable \
  recipes/pteron/all/conanfile.py || rc=1
"$CACHE/linter/bin/pylint" --rcfile=linter/pylintrc_testpackage --output-format=parseable \
  recipes/pteron/all/test_package/conanfile.py || rc=1
"$CACHE/linter/bin/yamllint" --config-file linter/yamllint_rules.yml -f standard \
  recipes/pteron/config.yml recipes/pteron/all/conandata.yml || rc=1
"$CACHE/linter/bin/python" linter/config_yaml_linter.py recipes/pteron/config.yml || rc=1
"$CACHE/linter/bin/python" linter/conandata_yaml_linter.py recipes/pteron/all/conandata.yml || rc=1
exit "$rc"
