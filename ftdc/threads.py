"""The worker threads a command line process lets its libraries start."""

from __future__ import annotations

import os

# numpy's OpenBLAS starts a worker thread for every core but one as numpy loads (pyarrow loads numpy, so every read
# does), and each spins on its core waiting for work for about a tenth of a second before it sleeps: 55-70 ms of CPU a
# process with a core free (a tenth of a summary of the 7.0 sample), less under load, as it yields to other jobs. No
# command does linear algebra (numpy serves elementwise arithmetic, sorting and medians here, which BLAS never runs),
# so its threads only ever spin (docs/performance.md). OpenBLAS reads the first of these that is set, once, when it
# loads.
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def no_blas_threads() -> None:
    """OpenBLAS left without worker threads, for a process that has not loaded numpy yet; a count the user set is
    kept."""
    if not any(os.environ.get(name) for name in BLAS_THREADS):
        os.environ[BLAS_THREADS[0]] = "1"
