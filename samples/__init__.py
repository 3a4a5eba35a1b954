"""The project's simulator and the demo data it writes (not part of the installed package).

`simulate` writes a node's FTDC (through `ftdc.writer`) and its mongod log from a
per-second model of the server: counters credited at completion, checkpoints draining
dirty data, the per-version layouts from 4.2 to 8.0. `make_samples` builds the demo node
beside this file, `make_scenarios` the incidents with a written truth under `scenarios/`,
`families` and `family_strategies` the randomised incidents the tests and
`bench.bench_families` draw, `scenario_table` prints the accuracy table. Run them from
the checkout as modules (`python -m samples.make_scenarios`); the tests import them
through pytest's `pythonpath` (pyproject.toml).
"""
