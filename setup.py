"""pip's entry to weightloader: the pure-Python package (python/weightloader/) plus the C++
extension weightloader._core, which CMake builds. Metadata is in pyproject.toml; the version is
the one in CMakeLists.txt's project(... VERSION x.y.z). Everything builds offline:

    /usr/bin/python3 -m venv --system-site-packages /tmp/venv
    /tmp/venv/bin/pip install --no-build-isolation .
    /usr/bin/python3 -m pip wheel --no-build-isolation --no-deps -w /tmp/wheels .

Build files (CMake's tree, setuptools' build and egg-info directories) go outside the source tree,
to $WL_PIP_BUILD_DIR or a folder of the system's temporary directory named after the user and the
checkout (kept, so a second install rebuilds only what changed), so a read-only checkout installs and
build/, the C++ project's CMake tree, is never touched. CMake's progress goes to stderr: `pip install
-v` shows it. CMAKE_ARGS adds arguments to the CMake configure step;
CMAKE_BUILD_PARALLEL_LEVEL overrides the job count. WL_PREBUILT_CORE=path/to/_core*.so installs that
extension instead of building one (scripts/setup.sh: the one its build/ holds).
"""
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
BUILD_BASE = os.environ.get("WL_PIP_BUILD_DIR") or os.path.join(
    tempfile.gettempdir(), f"weightloader-pip-{os.getuid()}-{hashlib.sha1(str(ROOT).encode()).hexdigest()[:12]}")


def cmake_version():
    """x.y.z from project(weightloader VERSION x.y.z): the one source of truth."""
    text = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"project\(\s*weightloader\s+VERSION\s+([0-9]+(?:\.[0-9]+)*)", text)
    if not match:
        raise RuntimeError("CMakeLists.txt has no project(weightloader VERSION x.y.z)")
    return match.group(1)


class CMakeBuild(build_ext):
    """Builds weightloader._core with the project's CMake (only the weightloader_python target, no
    tests or benchmarks) for the interpreter running this build, and copies it into the package."""

    def build_extension(self, ext):
        prebuilt = os.environ.get("WL_PREBUILT_CORE")
        if prebuilt:  # scripts/setup.sh: the extension its CMake build made in build/ (no second build)
            built = [pathlib.Path(prebuilt)]
            if not built[0].is_file():
                raise RuntimeError(f"WL_PREBUILT_CORE={prebuilt}: no such file")
        else:
            built = self.cmake_build()
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)

    def cmake_build(self):
        build_dir = pathlib.Path(self.build_temp).resolve() / "cmake"
        configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir), "-DWL_BUILD_TESTS=OFF", "-DWL_BUILD_BENCH=OFF",
                     "-DWL_BUILD_FUZZ=OFF", "-DWL_BUILD_PYTHON=ON", f"-DPython3_EXECUTABLE={sys.executable}"]
        # Ninja when it is there, unless the directory is configured already (the generator is fixed
        # then) or CMAKE_GENERATOR says otherwise. CMAKE_BUILD_TYPE (env) overrides Release.
        if shutil.which("ninja") and "CMAKE_GENERATOR" not in os.environ and not (build_dir / "CMakeCache.txt").exists():
            configure += ["-G", "Ninja"]
        configure += os.environ.get("CMAKE_ARGS", "").split()
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(cpus or 1)
        # CMake's output on stderr: pip shows it with -v (a minute of build is otherwise silent).
        print(f"weightloader: building the C++ extension with CMake in {build_dir} ({jobs} jobs)", file=sys.stderr, flush=True)
        subprocess.run(configure, check=True, stdout=sys.stderr)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "weightloader_python", "-j", jobs], check=True,
                       stdout=sys.stderr)

        built = sorted((build_dir / "python" / "weightloader").glob("_core*.so"))
        if len(built) != 1:
            raise RuntimeError(f"expected one _core*.so in {build_dir}/python/weightloader, found {built}")
        return built


os.makedirs(BUILD_BASE, exist_ok=True)  # egg_info insists that its directory exists

setup(
    version=cmake_version(),
    package_dir={"": "python"},
    packages=["weightloader", "weightloader.safetensors", "weightloader.vllm_plugin"],
    package_data={"weightloader": ["py.typed", "*.pyi"]},  # the type stubs, for editors and mypy
    include_package_data=False,
    ext_modules=[Extension("weightloader._core", sources=[])],  # sources: CMake's business
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": BUILD_BASE}, "egg_info": {"egg_base": BUILD_BASE}},
)
