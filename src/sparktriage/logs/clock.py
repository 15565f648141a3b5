"""Turn a log line's own time stamp into Unix seconds: the year, the time zone, the rollover.

vLLM stamps are ``MM-DD HH:MM:SS`` in the server process's local time, with no year and no
sub-second part. The year is inferred from a reference moment that the log cannot be later than
(the receive times of our line records, the file's modification time, or now for stdin): the
first stamp gets the latest year that does not put it after the reference (one day of slack for
time-zone doubt). Later stamps keep that year until the date jumps back by more than half a year
(Dec → Jan: a new year); the year never goes back: a stamp that jumps forward by more than half
a year belongs to the previous year only when that puts it at most a day before the last stamp
(an out-of-order line from just before the rollover), otherwise it is later in the same year.
The zone is the analysing machine's local zone unless one is given (``--tz``). Feb 29: the first
stamp takes the latest leap year not after the reference; a later one is in the current year
when it is a leap year, or in the next when that is a leap year and the stamp follows within
half a year (a rollover), and has no time otherwise (a line with no date, never one years
back). A collector's dated stamp on the same line (a CI runner's, ``docker
logs -t``) is better than the reference: `calibrate` takes the year from it, and the zone too when
none was given and the collector's stamp carries an offset.
"""

from __future__ import annotations

import datetime as _dt
import re
import time
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sparktriage.errors import UsageError

HALF_YEAR = 183 * 86400.0
SLACK = 86400.0
_OFFSET = re.compile(r"^(?:UTC|GMT)?([+-])(\d\d):?(\d\d)\Z")


def parse_tz(name: str | None) -> _dt.tzinfo | None:
    """`None`/`local` → None (local zone); `UTC`, `+02:00`, `-0530`, or an IANA name."""
    if name is None or name.lower() == "local":
        return None
    if name.upper() in ("UTC", "Z", "GMT"):
        return _dt.timezone.utc
    m = _OFFSET.match(name.strip())
    if m:
        sign = 1 if m.group(1) == "+" else -1
        return _dt.timezone(sign * _dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3))))
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise UsageError(f"unknown time zone {name!r} (use UTC, +02:00 or an IANA name)") from exc


def _frac(frac: str | None) -> float:
    return float("0." + frac) if frac else 0.0


def _leap_before(year: int) -> int:
    while not (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)):
        year -= 1
    return year


class StampClock:
    """Converts the year-less stamps of one log stream to Unix seconds, in order."""

    def __init__(self, reference: float | None = None, tz: _dt.tzinfo | None = None,
                 year: int | None = None) -> None:
        self.reference = time.time() if reference is None else reference
        self.tz = tz
        self.fixed_year = year
        self.year: int | None = year
        self.last: float | None = None
        self.year_source = "given" if year is not None else "reference"
        self.zone_source = "given" if tz is not None else "local"
        self._cache: tuple[str, float | None] = ("", None)
        self._hours: dict[tuple, float] = {}

    def _unix(self, year: int, month: int, day: int, hms: str) -> float | None:
        try:
            h, m, s = int(hms[0:2]), int(hms[3:5]), int(hms[6:8])
        except ValueError:
            return None
        base = self.hour_base(year, month, day, h)
        if base is None or m > 59 or s > 60:
            return None
        return base + 60 * m + min(s, 59)

    def hour_base(self, year: int, month: int, day: int, hour: int) -> float | None:
        """Unix seconds of the start of that hour in the clock's zone (None: not a real hour).
        Zone offsets (DST) change on hour boundaries, so this is cached per hour; the compiled
        scanner asks here too, so both paths share the zone arithmetic."""
        key = (year, month, day, hour)
        base = self._hours.get(key)
        if base is None:
            try:
                base = _dt.datetime(year, month, day, hour, tzinfo=self.tz).timestamp()
            except (ValueError, OverflowError, OSError, TypeError):
                return None
            if len(self._hours) > 4096:
                self._hours.clear()
            self._hours[key] = base
        return base

    def _reference_year(self) -> int:
        return _dt.datetime.fromtimestamp(self.reference, self.tz).year

    def from_stamp(self, stamp: str, frac: str | None = None) -> float | None:
        """Unix seconds of a ``MM-DD HH:MM:SS`` stamp, or None when it is not a real date."""
        if stamp == self._cache[0]:
            base = self._cache[1]
            return None if base is None else base + _frac(frac)
        try:
            month, day = int(stamp[0:2]), int(stamp[3:5])
        except ValueError:
            return None
        hms = stamp[6:]
        leap_day = month == 2 and day == 29
        if self.year is None:
            year = self._reference_year()
            year = _leap_before(year) if leap_day else year
            t = self._unix(year, month, day, hms)
            if t is not None and t > self.reference + SLACK:
                year = _leap_before(year - 1) if leap_day else year - 1
                t = self._unix(year, month, day, hms)
            if t is None:
                return None
            self.year = year
        else:
            t = self._unix(self.year, month, day, hms)
            if t is None and leap_day and self.last is not None:
                ahead = self._unix(self.year + 1, month, day, hms)  # a leap year next
                if ahead is not None and self.last < ahead <= self.last + HALF_YEAR:
                    self.year += 1
                    t = ahead
            if t is None:
                return None
            if self.last is not None and t < self.last - HALF_YEAR:
                self.year += 1  # Dec → Jan rollover
                t = self._unix(self.year, month, day, hms)
            elif self.last is not None and t > self.last + HALF_YEAR:
                back = self._unix(self.year - 1, month, day, hms)
                if back is not None and back >= self.last - SLACK:
                    self._cache = ("", None)  # a straggler from just before the rollover
                    return back + _frac(frac)
        if t is not None:
            self.last = t
        self._cache = (stamp, t)
        return None if t is None else t + _frac(frac)

    def calibrate(self, t_collector: float, stamp: str, collector_offset: str | None) -> None:
        """Take the year (and, when no zone was given, the zone) of the year-less stamps from
        a collector's dated stamp on the same line (a CI runner, ``docker logs -t``): the year
        that puts the stamp nearest the collector's moment; the zone as the difference, in whole
        quarter hours, when the collector's stamp is absolute (it carries an offset). Only before
        the first stamp is read, and never over a year given with ``--year``."""
        if self.fixed_year is not None or self.last is not None:
            return
        try:
            month, day = int(stamp[0:2]), int(stamp[3:5])
            h, m, s = int(stamp[6:8]), int(stamp[9:11]), int(stamp[12:14])
            year0 = _dt.datetime.fromtimestamp(t_collector, _dt.timezone.utc).year
        except (ValueError, OverflowError, OSError):
            return
        if self.tz is None and collector_offset is not None:
            best = None
            for year in (year0 - 1, year0, year0 + 1):
                try:
                    naive = _dt.datetime(year, month, day, h, m, min(s, 59),
                                         tzinfo=_dt.timezone.utc).timestamp()
                except (ValueError, OverflowError):
                    continue
                offset = round((naive - t_collector) / 900.0) * 900
                if abs(offset) <= 14 * 3600 and (best is None or abs(naive - offset - t_collector)
                                                 < abs(best[1] - best[2] - t_collector)):
                    best = (year, naive, offset)
            if best is None:
                return
            self.tz = _dt.timezone(_dt.timedelta(seconds=best[2]))
            self.zone_source = "collector"
            self._hours.clear()
            self._cache = ("", None)
        choices = []
        for year in (year0 - 1, year0, year0 + 1):
            t = self._unix(year, month, day, stamp[6:])
            if t is not None:
                choices.append((abs(t - t_collector), year))
        if choices:
            self.year = min(choices)[1]
            self.year_source = "collector"

    def from_full(self, stamp_full: str, frac: str | None = None,
                  utc_offset: str | None = None) -> float | None:
        """Unix seconds of ``YYYY-MM-DD HH:MM:SS`` (with an optional ``Z``/``+hh:mm`` offset)."""
        try:
            year, month, day = int(stamp_full[0:4]), int(stamp_full[5:7]), int(stamp_full[8:10])
            h, m, s = (int(x) for x in stamp_full[11:19].split(":"))
            tz = self.tz
            if utc_offset:
                tz = parse_tz("UTC" if utc_offset == "Z" else utc_offset)
            moment = _dt.datetime(year, month, day, h, m, min(s, 59), tzinfo=tz)
            return moment.timestamp() + _frac(frac)
        except (ValueError, OverflowError, OSError, UsageError):
            return None


def iso(t: float | None, tz: _dt.tzinfo | None = None) -> str | None:
    """ISO 8601 with offset and millisecond precision, in the given zone (default local)."""
    if t is None:
        return None
    try:
        moment = _dt.datetime.fromtimestamp(t, tz) if tz is not None else \
            _dt.datetime.fromtimestamp(t).astimezone()
    except (ValueError, OverflowError, OSError):
        return None
    return moment.isoformat(timespec="milliseconds")


_MINUTE_SECOND = [f"{m:02d}:{s:02d}.000" for m in range(60) for s in range(60)]


class IsoFormatter:
    """`iso(t, tz)` for many times, faster: whole seconds are formatted from a per-hour prefix.

    The hour's prefix and offset come from `iso` itself and are used only when the zone's offset
    is the same at both ends of the UTC hour and that hour starts on a local hour (every zone
    with whole-hour offsets, and DST shifts on hour boundaries); anything else, including
    fractional seconds, goes through `iso`. The result is identical (tests compare them)."""

    def __init__(self, tz: _dt.tzinfo | None = None) -> None:
        self.tz = tz
        self._hours: dict[int, tuple[str, str] | bool] = {}

    def __call__(self, t: float | None) -> str | None:
        if t.__class__ is not float or not t.is_integer():
            return iso(t, self.tz)
        seconds = int(t)
        k = seconds % 3600
        hour = self._hours.get(seconds - k)
        if hour is None:
            if len(self._hours) > 65536:
                self._hours.clear()
            hour = self._hours[seconds - k] = self._hour(seconds - k)
        if hour is False:
            return iso(t, self.tz)
        return hour[0] + _MINUTE_SECOND[k] + hour[1]

    def _hour(self, start: int) -> tuple[str, str] | bool:
        first, last = iso(float(start), self.tz), iso(float(start + 3599), self.tz)
        if first is None or last is None or len(first) < 24 or first[13:23] != ":00:00.000":
            return False
        if last[:14] != first[:14] or last[14:23] != "59:59.000" or last[23:] != first[23:]:
            return False
        return first[:14], first[23:]
