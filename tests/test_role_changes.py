"""Planned role changes told from the node's own counters (issue 39 §1), on a real node: the 4.2.1 sample's member
lost and regained the primary several times as its laptop slept; each time it came back it called an election on
timeout (electionMetrics.electionTimeout), a failover, never a plan. Its FTDC holds every counter the rule reads."""

import warnings

import analysis
from analysis.findings.detectors.replication import COUNTED, FAILOVER, NEW_TERM_COUNTED
from tests.conftest import require_samples


def test_a_real_members_failovers_are_not_called_planned():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(require_samples("ftdc", "mongod-4.2.1", "diagnostic.data"))
    series = result.series
    assert all(c in series.columns for c in (*COUNTED, FAILOVER, NEW_TERM_COUNTED))
    changes = [f for f in result.findings if f.kind == "primary_change"]
    assert len(changes) >= 3 and not any("planned" in f.evidence for f in changes)
    assert series[FAILOVER].fill_null(0).sum() >= 3  # the elections it called were on timeout
