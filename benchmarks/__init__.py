"""The course's benchmarks, one module each, run from the repository root as ``python -m benchmarks.NAME``.

Each benchmark writes results files under ``benchmarks/results/NAME/`` (:mod:`benchmarks.results_io`) and
renders its own section of ``benchmarks/README.md`` from them (``benchmarks/sections/``);
``python -m benchmarks.report`` collects the sections and writes ``benchmarks/README.md`` and the README's block.
"""
