"""A family outside ragen-bench, registered through the ``ragen_bench.envs`` entry point.

The worked example of docs/architecture.md ("Where a new env family goes"); the tests load
it by putting ``tests/plugin_pkg`` on ``sys.path``, where its dist-info declares the entry point.
"""
