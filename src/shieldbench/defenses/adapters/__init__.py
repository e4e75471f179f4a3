"""Adapters: detectors that are not shieldbench's own, behind the defense contract.

- ``_third_party``: offline detectors published on PyPI (``nanoguard``, ``guardify``,
  ``injectionshield``, ``promptsafe``, ``promptlint``).
- ``_python_spec``: ``python:MODULE:ATTRIBUTE``, your own class or function.
"""
