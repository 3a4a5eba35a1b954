"""The version audit (issue 39 §5): release candidates and development builds in production are flagged, and the end
of life is judged today (injectable), not only as of the data's last sample."""

import datetime as dt

import pytest

from analysis.workbench import audit

UTC = dt.timezone.utc


def _facts(version: str, last: dt.datetime | None, today: dt.date | None) -> audit.Facts:
    return audit.Facts(None, None, {"version": version}, None, None, None, last, today)


def _item(version, key, last=dt.datetime(2025, 1, 1, tzinfo=UTC), today=dt.date(2026, 11, 29)) -> audit.AuditItem:
    return {i.key: i for i in audit.audit(_facts(version, last, today))}[key]


def test_a_series_past_its_end_of_life_today_is_flagged_though_supported_when_recorded():
    # 6.0 reached its end of life on 2025-07-31: data from January 2025 read in November 2026 was told "supported until
    # 2025-07-31" (as of the data); the customer runs it today.
    item = _item("6.0.11", "end_of_life")
    assert item.severity == "warning"
    assert (
        "reached its end of life on 2025-07-31, before today" in item.has
        and "still supported when the data was recorded (2025-01-01)" in item.has
    )
    already = _item("4.4.29", "end_of_life")
    assert already.severity == "warning" and "already was when the data was recorded" in already.has


def test_today_is_injectable_and_defaults_to_now():
    assert _item("7.0.12", "end_of_life", today=dt.date(2027, 8, 31)).severity == "info"
    assert _item("7.0.12", "end_of_life", today=dt.date(2027, 9, 1)).severity == "warning"
    now = {i.key: i for i in audit.audit(_facts("3.6.8", None, None))}["end_of_life"]
    assert now.severity == "warning" and "before today" in now.has


@pytest.mark.parametrize(
    ("version", "kind"),
    [
        ("7.0.0-rc3", "a release candidate"),
        ("8.0.0-rc18", "a release candidate"),
        ("4.4.0-alpha", "a development build"),
        ("6.0.5-12-gabc1234f", "a development build"),
        ("4.3.2", "a development series"),
        ("3.5.13", "a development series"),
    ],
)
def test_release_candidates_and_development_builds_are_flagged(version, kind):
    item = _item(version, "release_kind")
    assert item.severity == "warning" and item.has.startswith(f"{version}: {kind}") and item.change


@pytest.mark.parametrize("version", ["4.4.29", "5.0.31", "5.1.1", "6.3.2", "7.0.12", "8.0.4"])
def test_production_releases_are_not(version):
    # From 5.0 on an odd minor is a rapid release (Atlas), not a development series.
    assert _item(version, "release_kind").severity == "info"


def test_the_end_of_life_date_is_not_read_as_today():
    # "series 6.0 is past its end of life today (2025-07-31)" read as if today were 2025-07-31 (issue 39's review).
    has = _item("6.0.11", "end_of_life").has
    assert "today (" not in has and "on 2025-07-31, before today" in has


def test_a_supported_series_says_it_is_supported_today_and_when_recorded():
    # "3.4.0: supported until 2020-01-31" read alone says neither as of when; both days are said.
    has = _item("7.0.12", "end_of_life", last=dt.datetime(2025, 1, 1, tzinfo=UTC), today=dt.date(2026, 11, 29)).has
    assert has == "7.0.12: series 7.0 supported until 2027-08-31: today (2026-11-29) and when the data was recorded (2025-01-01)"
    old = _item("3.4.0", "end_of_life", last=dt.datetime(2019, 6, 1, tzinfo=UTC), today=dt.date(2026, 11, 29))
    assert (
        old.severity == "warning"
        and "before today" in old.has
        and "still supported when the data was recorded (2019-06-01)" in old.has
    )
