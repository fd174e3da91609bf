"""Installs ``sixnimmt_gymnasium.pth`` beside the packages (everything else is in pyproject.toml).

The ``.pth`` file registers ``sixnimmt/SixNimmt-v0`` with Gymnasium in processes that never import
``sixnimmt_env`` (see ``sixnimmt_gymnasium_hook.py``). setuptools has no declarative way to put a file in
site-packages itself, so it goes in as a data file at site-packages' path relative to the install prefix.
"""

import os
import sysconfig

from setuptools import setup

site_packages = os.path.relpath(sysconfig.get_path("purelib"), sysconfig.get_path("data"))
setup(data_files=[(site_packages, ["sixnimmt_gymnasium.pth"])])
