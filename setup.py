"""`pip install .` (docs/python.md): packs the Python module `chopsim` (python/chopsim), its compiled extension
`_chopsim` and the shipped configs into a wheel.

The extension is built with CMake into build/pip, or taken from an existing build when CHOPSIM_BUILD_DIR names one
(`cmake --build BUILD --target chopsim_python` made it: what CI does, so the wheel does not build chopsim twice).
"""
import glob
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))


class BuildWithCMake(build_py):
    def run(self):
        super().run()
        build = os.environ.get("CHOPSIM_BUILD_DIR")
        if not build:
            build = os.path.join(ROOT, "build", "pip")
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release"])
            subprocess.check_call(["cmake", "--build", build, "--target", "chopsim_python", "-j",
                                   str(os.cpu_count() or 1)])
        built = glob.glob(os.path.join(build, "python", "chopsim", "_chopsim*.so"))
        if not built:
            raise SystemExit("setup.py: no _chopsim extension in %s/python/chopsim: build it first "
                             "(cmake --build %s --target chopsim_python) or leave CHOPSIM_BUILD_DIR unset" %
                             (build, build))
        package = os.path.join(self.build_lib, "chopsim")
        shutil.copy2(built[0], package)
        # The shipped run configs and the hardware, model and cluster files they name: the package adds this folder
        # to CHOPSIM_CONFIG_PATH when imported, so `chopsim.run("llama3-8b-fsdp")` works wherever it is installed.
        shutil.copytree(os.path.join(ROOT, "configs"), os.path.join(package, "configs"), dirs_exist_ok=True)


class BinaryDistribution(Distribution):
    """A platform wheel: the package holds a compiled extension."""

    def has_ext_modules(self):
        return True


os.makedirs(os.path.join(ROOT, "build", "setuptools"), exist_ok=True)
setup(
    packages=["chopsim"],
    package_dir={"chopsim": "python/chopsim"},
    cmdclass={"build_py": BuildWithCMake},
    distclass=BinaryDistribution,
    options={"build": {"build_base": os.path.join("build", "setuptools")},
             "egg_info": {"egg_base": os.path.join("build", "setuptools")}},
)
