# SPDX-License-Identifier: BSD-3-Clause
"""Test-only recipe: pteron's real package_info() on a package that holds no
binaries (labelled METADATA_ONLY), for checking what a consumer gets on a
toolchain this machine cannot run (MSVC). tests/test_conan_metadata.py makes
it with `conan export-pkg` in a scratch Conan home; never publish it.

It is the real recipe's class (conanfile.py at the repository root, exported
into base/ beside this file) with build() and package() replaced: options,
requirements, validate() and package_info() are the real ones."""
import importlib.util
import os

from conan.tools.files import copy, save

_HERE = os.path.dirname(os.path.abspath(__file__))


def _base_recipe():
    """The real recipe: base/ once exported, the repository root before."""
    for folder in (os.path.join(_HERE, "base"), os.path.join(_HERE, "..", "..", "..")):
        path = os.path.join(folder, "conanfile.py")
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("pteron_base_recipe", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    raise RuntimeError(f"pteron's conanfile.py is neither in {_HERE}/base nor three folders up")


_base = _base_recipe()


class PteronMetadataOnly(_base.PteronConan):
    exports = ()
    exports_sources = ()

    def export(self):
        root = os.path.dirname(os.path.abspath(_base.__file__))
        for pattern in ("conanfile.py", "VERSION", "cmake/components.json", "cmake/cuda_trains.json",
                        "conan-center/recipes/pteron/all/conanfile.py"):
            copy(self, pattern, root, os.path.join(self.export_folder, "base"))

    def set_version(self):
        folder = os.path.dirname(os.path.abspath(_base.__file__))
        with open(os.path.join(folder, "VERSION"), encoding="utf-8") as f:
            self.version = f.read().strip()

    def generate(self):
        pass

    def build(self):
        pass

    def package(self):
        save(self, os.path.join(self.package_folder, "METADATA_ONLY"),
             "metadata-only package (tests/recipes/pteron_metadata): no binaries\n")
        copy(self, "components.json",
             os.path.join(os.path.dirname(os.path.abspath(_base.__file__)), "cmake"),
             os.path.join(self.package_folder, "share", "pteron"))
