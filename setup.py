"""The C line matcher (tcview/ingest/_lines.c), built where a compiler is at hand: where none
is, tcview installs all the same and finds the lines with the regex it mirrors."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("tcview.ingest._lines", ["tcview/ingest/_lines.c"], optional=True)])
