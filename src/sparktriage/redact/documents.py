"""The document walker: every string of a JSON/YAML document or of a file of records, scrubbed.

Strings go through the one detector (detect.py); values under secret-looking keys and the
element after a secret flag in a list are replaced whole; with an anonymizer, host names,
domains, IP addresses and users are replaced too (anonymize.py). One `DocumentRedactor` serves
one run (a report, an export, a run directory), so that stand-ins are shared across its files.

A private key block split over several strings (a log captured line by line, each record
holding one line of the block) is followed per field: the state of a `line` field carries from
one record to the next, but never into other fields, and never into keys. Keys are scrubbed
with a scrubber of their own that holds no such state, so the keys `t`/`node`/`line` of the
records after a `BEGIN ... PRIVATE KEY` line stay what they are.
"""

from __future__ import annotations

from typing import Any

from sparktriage.redact.anonymize import Anonymizer
from sparktriage.redact.detect import SECRET_FLAG, SecretBook, SecretScrubber, secret_name

_CACHE_MAX_LEN = 64
_PLAIN = (int, float, bool, type(None))  # values with nothing to scrub


class DocumentRedactor:
    """Scrubs documents and records; one instance per run so that stand-ins are shared."""

    def __init__(self, book: SecretBook | None = None, anonymizer: Anonymizer | None = None) -> None:
        self.book = book if book is not None else SecretBook()
        self.anonymizer = anonymizer
        self.scrubber = SecretScrubber(self.book)  # free text, and fields without a name
        self._keys = SecretScrubber(self.book)  # dictionary keys: never in a key block
        self._fields: dict[str, SecretScrubber] = {}  # one per field name (key blocks)
        self._cache: dict[str, str] = {}
        self._known_seen = 0
        self._secret_keys: dict[str, bool] = {}

    def reset(self) -> None:
        """Call at every file boundary: a key block never carries into another file."""
        self.scrubber.reset()
        self._keys.reset()
        self._fields.clear()

    # -- strings -------------------------------------------------------------------------------
    def _scrub(self, value: str, scrubber: SecretScrubber) -> str:
        if len(self.book.known) != self._known_seen:  # a newly found secret: cached results
            self._cache.clear()                        # may hold it
            self._known_seen = len(self.book.known)
        cacheable = len(value) <= _CACHE_MAX_LEN and not scrubber.in_block
        if cacheable:
            hit = self._cache.get(value)
            if hit is not None:
                return hit
        out = scrubber.scrub(value)
        if self.anonymizer is not None:
            out = self.anonymizer.apply(out)
        if cacheable and not scrubber.in_block:
            self._cache[value] = out
        return out

    def text(self, value: str) -> str:
        """One string, scrubbed (and anonymized when asked); a key block carries to the next."""
        return self._scrub(value, self.scrubber)

    def key(self, value: str) -> str:
        """A dictionary key, scrubbed without any key-block state."""
        self._keys.reset()
        return self._scrub(value, self._keys)

    def _field(self, name: str) -> SecretScrubber:
        scrubber = self._fields.get(name)
        if scrubber is None:
            scrubber = self._fields[name] = SecretScrubber(self.book)
        return scrubber

    def _secret_key(self, key: str) -> bool:
        known = self._secret_keys.get(key)
        if known is None:
            known = self._secret_keys[key] = secret_name(key)
        return known

    def value(self, value: Any, key: str | None = None) -> Any:
        """A JSON/YAML value, rebuilt with every string scrubbed (`key`: the field it is in)."""
        kind = type(value)
        if kind is str:
            if key is not None and self._secret_key(key) and value.strip():
                return self.scrubber.replace("secret", value)
            return self._scrub(value, self.scrubber if key is None else self._field(key))
        if kind is dict:
            out = {}
            for k, v in value.items():
                if type(k) is str:
                    new_key = self.key(k)
                else:
                    new_key, k = k, None
                out[new_key] = v if type(v) in _PLAIN else self.value(v, k)
            return out
        if kind in (list, tuple):
            if all(type(item) in _PLAIN for item in value):
                return list(value)  # numbers (token ids, timings): nothing to scrub
            out_list = []
            secret_next = False
            inherit = key if key is not None and self._secret_key(key) else None
            for item in value:
                if secret_next and type(item) is str:
                    out_list.append(self.scrubber.replace("flag-value", item))
                    secret_next = False
                    continue
                secret_next = type(item) is str and bool(SECRET_FLAG.match(item))
                out_list.append(self.value(item, inherit))
            return out_list
        return value

    def lines(self, text: str) -> str:
        """A text file, line by line (a key block is followed from line to line)."""
        self.scrubber.reset()
        return "".join(self.text(line) for line in text.splitlines(keepends=True))


__all__ = ["DocumentRedactor"]
