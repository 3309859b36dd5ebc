"""Builds scanfuse's Python extension (metadata is in pyproject.toml).

The extension ``scanfuse._scanfuse`` is compiled from the binding (python/_scanfuse.c)
and every C source of the library (src/*.c) directly, so ``pip install .`` needs only a
C compiler: no CMake, no prebuilt library.  A new file in src/ (the CUDA backend, say)
is picked up without editing this file.  Build products go under build-python/ so they
stay out of the CMake build folders and out of git.
"""
import glob
import os
import sys
from concurrent.futures import ThreadPoolExecutor

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def rel(*parts):
    return os.path.join(*parts)


lib_sources = sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "src", "*.c")))
if not lib_sources:
    sys.exit("setup.py: no C sources under src/; run it from the scanfuse repository root")
headers = sorted(
    os.path.relpath(p, HERE)
    for p in glob.glob(os.path.join(HERE, "src", "*.h"))
    + glob.glob(os.path.join(HERE, "src", "*.def"))
    + glob.glob(os.path.join(HERE, "include", "*.h"))
)

libraries = []
extra_compile_args = []
extra_link_args = []
if os.name == "posix":
    # C11 as the library is written; -O2 since scans are the point; no a * b + c
    # contracted into a fused multiply-add (results are specified bit for bit; clang
    # contracts by default); no errno from math functions (CMakeLists.txt: nothing reads
    # it, and sqrt loops vectorize).  Python's own flags come first, these override them.
    extra_compile_args = ["-std=c11", "-O2", "-ffp-contract=off", "-fno-math-errno"]
    extra_link_args = ["-pthread"]
    libraries = ["m"]
    if sys.platform.startswith("linux"):
        libraries.append("dl")  # the CUDA backend dlopen()s libcuda / libnvrtc

# egg_info's folder must exist before setuptools looks at it (a fresh clone has none).
os.makedirs(os.path.join(HERE, "build-python"), exist_ok=True)

ext = Extension(
    "scanfuse._scanfuse",
    sources=[rel("python", "_scanfuse.c")] + lib_sources,
    depends=headers,
    include_dirs=["include", "src"],
    define_macros=[("_POSIX_C_SOURCE", "200809L")],
    extra_compile_args=extra_compile_args,
    extra_link_args=extra_link_args,
    libraries=libraries,
)


class build_ext_sources_in_parallel(build_ext):
    """Compiles one extension's sources side by side: build_ext's own ``parallel`` option
    runs several extensions at once, and this package has one, so its 45 sources went
    through the compiler one after another (`make test-python` on a fresh clone, 2 cores:
    66 s, 42 s side by side; session 41)."""

    def build_extension(self, ext):
        one_by_one = self.compiler.compile

        def compile_side_by_side(sources, *args, **kwargs):
            with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
                objects = pool.map(lambda src: one_by_one([src], *args, **kwargs), sources)
                return [o for objs in objects for o in objs]

        self.compiler.compile = compile_side_by_side
        try:
            super().build_extension(ext)
        finally:
            self.compiler.compile = one_by_one


setup(
    ext_modules=[ext],
    cmdclass={"build_ext": build_ext_sources_in_parallel},
    options={
        "build": {"build_base": rel("build-python", "setuptools")},
        "egg_info": {"egg_base": "build-python"},
    },
)
