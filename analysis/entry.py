"""The one library entry for a run over what a user points at: `run(paths, logs)`.

    run(["bundle.tar.gz"]) -> Run: every node found, its log by the one policy, incidents composed once

It finds what the paths hold (`ftdc.inputs.gather`; no FTDC is the one error `Inputs.nodes` gives), picks the logs by
the policy every command follows (`ftdc.inputs.plan_logs`: those given, else those inside the inputs, else those
beside each diagnostic.data), reads the logs nobody named leniently, analyses every node and composes the run's
incidents once (`analyze_nodes`), redacts the finished result when asked, and says where the search for a log looked
when it found none. The command line parses arguments and renders what this returns; notebooks call it as the
command line does. A small first node's decode starts before the stages are imported (`ftdc.decoding`), which is why
they are imported here, in `run`, and not above.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.series.metrics import candidates
from ftdc.decoding import decode_ahead
from ftdc.inputs import Inputs, gather, plan_logs, what_was_found
from ftdc.memory import imports_kept
from ftdc.timeutil import TimeArg, time_range

if TYPE_CHECKING:
    from analysis.nodes import NodesAnalysis
    from analysis.observe import Analysis
    from analysis.outputs.redact import Redactor

PathsArg = str | os.PathLike | Sequence[str | os.PathLike]


@dataclass(frozen=True)
class Run:
    """What a run over the paths gave: the composed (and, when asked, redacted) result, what the paths held, and what
    a user should be told of them."""

    result: NodesAnalysis
    inputs: Inputs
    notes: list[str]
    """What the paths held that a user should know before trusting the answer (`ftdc.inputs.what_was_found`)."""
    beside: list[Path]
    """The logs found beside the FTDC and read, nobody having named them: a user is told which, and how to name another."""
    looked: str | None = None
    """Where the search for a log looked when it found none, in the user's own paths (the result's own, redacted, names
    none): for the user's terminal."""
    redactor: Redactor | None = None
    """The pseudonyms of a redacted run, for the sender to keep (`write_key`); None unredacted."""

    @property
    def nodes(self) -> list[Analysis]:
        return self.result.nodes


def run(
    paths: PathsArg,
    logs: Sequence[str | os.PathLike] = (),
    *,
    no_log: bool = False,
    start: TimeArg = None,
    end: TimeArg = None,
    redact: bool = False,
    keep_metrics: bool = False,
    progress: Callable[[int, int, str], None] = lambda done, total, what: None,
    note: Callable[[str], None] = lambda text: None,
) -> Run:
    """Analyses every node behind `paths` with its logs (`logs` given, or log files among the paths, read strictly;
    otherwise those found, read where they can be; none under `no_log`). `progress(done, total, what)` follows the
    stages of every node; `note(text)` hears each of `Run.notes` as soon as the paths are looked through, before the
    long part. `keep_metrics`: the analysis' pass keeps every other metric too, for the explorer (`analyze_nodes`)."""
    paths = [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]
    found = gather(paths)
    notes = what_was_found(paths, found)
    for text in notes:
        note(text)
    found.nodes(paths)
    plan = plan_logs(paths, found, logs, no_log)
    # The first node's decode starts before the stages load, on a core their imports leave idle (a small node's is done
    # by the time they are: `decode_ahead`); this module loads none of them, so that nothing else comes first. With the
    # stages loaded already (`explore` imports its own first, a notebook's second run) nothing would overlap it, and
    # the reader's decode on every core is the quicker.
    lower, upper = time_range(start, end)
    loaded = "analysis.observe" in sys.modules
    started = None if loaded else decode_ahead(found.ftdc[0], candidates(), lower, upper, keep=keep_metrics)
    with imports_kept():
        from analysis.nodes import analyze_nodes
        from analysis.observe import STAGES, read_found_logs
    read = plan.given or (read_found_logs(plan.found, start, end) if plan.found else None)
    total = len(STAGES) * len(found.ftdc)
    steps = iter(range(1, total + 1))
    result = analyze_nodes(
        found.ftdc,
        read,
        start=start,
        end=end,
        progress=lambda stage: progress(next(steps, total), total, f"read {stage}"),
        keep_metrics=keep_metrics,
        started=started,
    )
    redactor, looked = None, None
    if redact:
        from analysis.outputs.redact import Redactor, redact_result

        redactor = Redactor()
        result = redact_result(result, redactor)
    if not no_log and not plan.paths:
        from analysis.outputs.words import no_log_note

        # Where the search looked, in the user's own paths; an attachment, redacted, does not name them.
        folders = [str(d.parent) for d in found.ftdc if d.name == "diagnostic.data"]
        looked = no_log_note([str(p) for p in paths], folders)
        result = dataclasses.replace(result, no_log=no_log_note([], []) if redact else looked)
    beside = plan.found if plan.beside and read is not None else []
    return Run(result, found, notes, beside, looked, redactor)
