"""Idle transactions the reaper aborts every minute (issue 39 §3): one incident, not one per transaction, its root cause
the history they pinned with the holders named from the log (the session, its transaction numbers, the client, how often
the reaper aborted them); the checkpoints and cache episodes inside it belong to it. Replica-set members and single
nodes, 6.0 to 8.0 (the simulator's 4.4+ layouts)."""

import os
import tempfile
import warnings
from pathlib import Path

import msgspec
from hypothesis import example, given, settings

import analysis
from ftdc.logs import read_logs
from ftdc.logs.events import expired_holder, typed_values
from ftdc.logs.json_records import EventAttr
from samples.families import Incident, Shape, build_reaped, reaped_failures
from samples.family_strategies import REAPED

EXAMPLES = max(2, int(os.environ.get("FTDC_FAMILY_EXAMPLES", "8")) // 2)


def reaped_right(shape: Shape, incident: Incident, member: bool) -> list[str]:
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scenario, held = build_reaped(shape, incident, Path(folder), member)
        return reaped_failures(scenario, held, analysis.analyze(scenario.ftdc, scenario.log), shape)


@settings(max_examples=EXAMPLES, deadline=None)
# Cache episodes minutes apart (a transaction aborted before dirty data reached the trigger between them) were an incident
# each, the later ones blamed on a small cache, a configured trigger or the write load, their usual pinned range the pinning
# itself; the holders were not named.
@example(case=(Shape(layout="8.0-services", cache_gb=2.0, seed=3), Incident("reaped_every_minute", 2400, 4.0), True))
@example(case=(Shape(layout="6.0", seed=11), Incident("reaped_every_minute", 2700, 4.0, strength=0.3), False))
@example(case=(Shape(layout="8.0", period_s=5, seed=7), Incident("reaped_every_minute", 1300, 4.0, strength=0.8), False))
@given(case=REAPED)
def test_idle_transactions_reaped_every_minute_are_one_incident_with_their_holders(case):
    assert reaped_right(*case) == []


SESSION = "6490fd4a-c393-fd0e-1cc6-2be5783646bf"


def test_the_reapers_abort_names_its_holder_in_every_log_format():
    # 6.0+: the transaction number with its retry counter; 4.4-5.x: alone; 4.2: the text of the line.
    for attr in (
        f'{{"sessionId": {{"$uuid": "{SESSION}"}}, "txnNumberAndRetryCounter": {{"txnNumber": 17, "txnRetryCounter": 0}}}}',
        f'{{"sessionId": {{"$uuid": "{SESSION}"}}, "txnNumber": 17}}',
    ):
        typed = msgspec.json.decode(attr, type=EventAttr)
        kind, *_, text = typed_values(20707, "COMMAND", "Aborting transaction", typed, [])
        assert kind == "transaction_expired" and expired_holder(text) == (SESSION, 17)
    legacy = (
        f'Aborting transaction with txnNumber 17 on session with lsid {{ id: UUID("{SESSION.upper()}"), uid: BinData(0, ) }} '
        "because it has been running for longer than 'transactionLifetimeLimitSeconds'"
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mongod.log"
        path.write_text(f"2019-06-18T11:59:16.516+0100 I  COMMAND  [TransactionReaper] {legacy}\n")
        [(kind, text)] = read_logs(path).events.select("kind", "text").rows()
    assert kind == "transaction_expired" and expired_holder(text) == (SESSION, 17)
    assert expired_holder("Aborting transaction because it has been running for longer") is None


def test_a_single_transaction_still_told_as_long_running():
    # One transaction the client left open and ended: the words for a long-running holder, no reaper named.
    from samples.families import analyzed, build, failures

    scenario, result = analyzed(
        build, Shape(layout="7.0"), Incident("cache_pressure", 120, 4.0, "dirty", 0.5, pinned=True, pinned_by="transaction")
    )
    assert failures(scenario, result) == []
    causes = [i.root_cause for i in result.incidents if i.root_cause.evidence.get("mechanism") == "pinned_history"]
    assert causes and all(c.headline == "A long-running transaction or cursor pinning history" for c in causes)
