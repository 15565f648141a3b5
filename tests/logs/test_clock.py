"""The document's fast time formatting equals `iso` everywhere; the hour base the compiled scanner
asks for is the clock's own."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from sparktriage.logs.clock import IsoFormatter, StampClock, iso

ZONES = [None, dt.timezone.utc, dt.timezone(dt.timedelta(hours=5, minutes=45)),
         dt.timezone(dt.timedelta(hours=-3, minutes=-30)), ZoneInfo("Europe/Paris"),
         ZoneInfo("Australia/Lord_Howe"), ZoneInfo("America/St_Johns"), ZoneInfo("Africa/Monrovia")]
DST_EDGES = [1711846800, 1729990800, 1743901200, 1759626000]  # Paris and Lord Howe switches

times = st.one_of(
    st.integers(-10**10, 5 * 10**9).map(float),
    st.sampled_from(DST_EDGES).flatmap(lambda t: st.integers(-7200, 7200).map(lambda d: float(t + d))),
    st.floats(-1e12, 1e12, allow_nan=False),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e300, None, 0.5, -0.0]),
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(ZONES))), st.lists(times, min_size=1, max_size=20))
def test_iso_formatter_equals_iso(zone, values):
    fmt = IsoFormatter(ZONES[zone])
    for t in values:
        assert fmt(t) == iso(t, ZONES[zone]), t


def test_iso_formatter_over_a_day_of_seconds_around_a_dst_switch():
    for zone in (ZoneInfo("Europe/Paris"), ZoneInfo("Australia/Lord_Howe")):
        fmt = IsoFormatter(zone)
        for t in range(DST_EDGES[0] - 43200, DST_EDGES[0] + 43200, 7):
            assert fmt(float(t)) == iso(float(t), zone)


def test_hour_base_is_what_stamps_are_built_from():
    clock = StampClock(reference=1_790_000_000.0, tz=ZoneInfo("Europe/Paris"), year=2026)
    base = clock.hour_base(2026, 3, 29, 3)
    assert base == dt.datetime(2026, 3, 29, 3, tzinfo=ZoneInfo("Europe/Paris")).timestamp()
    assert clock.from_stamp("03-29 03:10:05") == base + 605
    assert clock.hour_base(2026, 2, 30, 1) is None and clock.hour_base(2026, 13, 1, 0) is None
