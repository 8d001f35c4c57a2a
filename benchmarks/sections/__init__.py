"""One module per section of ``benchmarks/README.md`` (and the blocks the README and notebook 14 quote), each
rendering its benchmark's results files; ``benchmarks/report.py`` collects them in :data:`benchmarks.report.SECTIONS`.

A section module has ``section(runs, checks) -> list[str]``: the page's lines for it, from the real-data runs
(``{run: {pipeline: [record per seed]}}``) and the ``cli_check`` records, or from its own results folder.
"""
