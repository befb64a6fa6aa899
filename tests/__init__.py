"""The tests mirror the package: ``tests/<room>/test_<module>.py`` tests ``deepagent_magics/<room>/<module>.py``.

Each folder is a package (``tests.core.loop.test_pipeline``), so two rooms may each hold a test file of the
same name; shared helpers are imported by their package path (``from tests.kernels import execute``).
"""
