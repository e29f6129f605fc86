"""conf/ stays at the top of the clone, where Hydra's layout, the docs and `hydra.searchpath` users expect
it, and installs inside the package as `runner/conf` (runner/config/paths.py finds either). pyproject.toml cannot
say this alone: its package finder sees only folders under runner/. Everything else is in pyproject.toml."""

from setuptools import find_namespace_packages, setup

setup(packages=[*find_namespace_packages(include=["runner", "runner.*"]), "runner.conf"],
      package_dir={"runner.conf": "conf"})
