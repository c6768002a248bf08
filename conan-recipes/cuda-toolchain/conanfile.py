# SPDX-License-Identifier: BSD-3-Clause
"""pteron-cuda-toolchain: one CUDA release train's nvcc, as a Conan tool requirement.

pteron's recipe (../../conanfile.py) tool-requires ``pteron-cuda-toolchain/<cuda>``
(13.2 for cuda_train=cu132, 13.4 for cu134) when it builds backend_cuda, so the
Conan profile alone selects the train. This package is the train's PyPI wheels
(nvidia-cuda-nvcc, -crt, nvidia-nvvm, nvidia-cuda-runtime for cuda.h and
cudaTypedefs.h, nvidia-cuda-cuobjdump), every one pinned to the train as
cmake/cuda_trains.json lists them (an unpinned nvcc pulls another train's nvvm
and crt), installed with pip for the build machine. It needs pip and PyPI (or a
mirror) when it is built, nothing after: the package is cached like any other.

    conan export conan-recipes/cuda-toolchain --version 13.4   (scripts/conan.sh does it)

What it gives its consumer (the pteron build):
    conf user.pteron.cuda:nvcc, user.pteron.cuda:include, user.pteron.cuda:cuobjdump, user.pteron.cuda:train
nvcc runs the build machine's host compiler (gcc on Linux, cl.exe on Windows).
"""
import json
import os
import subprocess
import sys

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.files import copy

_HERE = os.path.dirname(os.path.abspath(__file__))


def _trains():
    """The trains: the copy export() put beside this file in the Conan cache, or
    the repository's own when the recipe runs from its folder."""
    for path in (os.path.join(_HERE, "cuda_trains.json"),
                 os.path.join(_HERE, "..", "..", "cmake", "cuda_trains.json")):
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                return json.load(f)["trains"]
    raise ConanInvalidConfiguration("pteron-cuda-toolchain: cuda_trains.json not found")


class PteronCudaToolchain(ConanFile):
    name = "pteron-cuda-toolchain"
    description = "A CUDA train's nvcc, crt, nvvm, driver headers and cuobjdump, from pinned PyPI wheels"
    license = "LicenseRef-NVIDIA-CUDA-EULA"
    package_type = "application"
    # Built on first use: `conan create . -pr windows-cu134` works without --build=missing.
    build_policy = "missing"
    settings = "os", "arch"

    def export(self):
        # The one train list, cmake/cuda_trains.json, travels with the recipe.
        copy(self, "cuda_trains.json", os.path.join(self.recipe_folder, "..", "..", "cmake"),
             self.export_folder)

    def _train(self):
        for name, t in _trains().items():
            if t["cuda"] == str(self.version):
                return name, t
        raise ConanInvalidConfiguration(
            f"pteron-cuda-toolchain/{self.version}: no train of cmake/cuda_trains.json is CUDA "
            f"{self.version} (trains: {', '.join(t['cuda'] for t in _trains().values())})")

    def validate(self):
        self._train()

    def build(self):
        _, t = self._train()
        pins = [f"{w}=={v}" for w, v in t["wheels"].items()]
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
               "--no-deps", "--target", os.path.join(self.build_folder, "wheels"), *pins]
        self.output.info("pip: " + " ".join(pins))
        subprocess.run(cmd, check=True)

    def package(self):
        import shutil

        shutil.copytree(os.path.join(self.build_folder, "wheels", "nvidia", "cu13"),
                        os.path.join(self.package_folder, "cuda"), symlinks=True)

    def package_info(self):
        name, _ = self._train()
        cuda = os.path.join(self.package_folder, "cuda")
        exe = ".exe" if self.settings.os == "Windows" else ""
        self.conf_info.define("user.pteron.cuda:train", name)
        self.conf_info.define_path("user.pteron.cuda:nvcc", os.path.join(cuda, "bin", "nvcc" + exe))
        self.conf_info.define_path("user.pteron.cuda:include", os.path.join(cuda, "include"))
        self.conf_info.define_path("user.pteron.cuda:cuobjdump",
                                   os.path.join(cuda, "bin", "cuobjdump" + exe))
        self.cpp_info.includedirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.bindirs = []
