"""Only here to pass the cffi build script to setuptools; all metadata is in pyproject.toml."""

from setuptools import setup

setup(cffi_modules=["native/build_core.py:ffibuilder"])
