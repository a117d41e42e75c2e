"""Build hook for the optional compiled modules (native/); everything else is in pyproject.toml."""

from setuptools import Extension, setup

FLAGS = ["-O3", "-std=c11", "-Wall", "-Wno-missing-field-initializers"]

# Both are optional: without a C compiler profview still works, on its pure-Python code paths.
setup(
    ext_modules=[
        Extension("profview._fastscan", sources=["native/fastscan.c"], extra_compile_args=FLAGS, optional=True),
        Extension("profview._calltree", sources=["native/calltree.c"], extra_compile_args=FLAGS, optional=True),
    ]
)
