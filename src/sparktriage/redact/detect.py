"""Finding secrets in text: the patterns, and the stable stand-ins that replace them.

The one secret detector of sparktriage (standard library only: it is shipped to the nodes with
the agent, collect/shipping.py). Its users give it their stand-ins through a book with
`stand_in(kind, value)`: `SecretBook` (`REDACTED-<kind>-<n>`: run directories, documents,
exports, reports, terminal output), the capture's HMAC book (`***<hex>`, redact/capture.py) and
`StarBook` (`***`).

What counts as a secret (docs/redaction.md): private key blocks (also when split over several
log lines), API keys of known shapes (OpenAI `sk-`, Hugging Face `hf_`, NVIDIA `nvapi-`,
GitHub, GitLab, Slack, Google, AWS access key ids, JWTs), bearer and basic credentials,
passwords inside URLs, values of command-line flags such as `--api-key`, and values assigned to
names that look secret (`HF_TOKEN=...`, `password: ...`, `'api_key': ['...']`). Each distinct
secret value gets one stand-in, `REDACTED-<kind>-<n>`, the same in every file; the value itself
is never written anywhere (the private map keeps only a short hash to recognise it).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

STAND_IN_PREFIX = "REDACTED-"
_SUPPLY = re.compile(r"<supply:[A-Za-z0-9_.-]{1,80}>")  # reproduce's placeholders (docs/reproduce.md)
KNOWN_MIN, KNOWN_MAX = 8, 1000  # known values: long enough not to be common words; bounded
_PLACEHOLDERS = {"or", "and", "to", "is", "the", "with", "from", "not", "if", "as", "of", "for",
                 "", "none", "null", "nil", "true", "false", "set", "unset", "***", "xxx",
                 "<redacted>", "redacted", "-", "''", '""', "[]", "{}", "bearer", "basic", "digest"}
_SECRET_LAST = {"key", "apikey", "token", "secret", "password", "passwd", "pwd", "pass",
                "passphrase", "credential", "credentials", "auth", "authorization", "cookie",
                "keys", "secrets", "passwords", "pat"}
_SECRET_ANY = {"password", "passwd", "secret", "apikey", "passphrase"}
_NOT_SECRET_LAST = {"file", "path", "dir", "name", "names", "id", "env", "var", "ref",
                    "source", "length", "len", "type", "format", "count", "enabled"}
_COUNTING = {"per", "num", "max", "min", "total", "avg", "mean", "n", "count"}
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORDS = re.compile(r"[^A-Za-z0-9]+")
_FLAG_WORDS = r"(?:api-?key|token|password|passwd|secret|access-key|secret-key|auth|apikey)"
SECRET_FLAG = re.compile(rf"^--?(?:[a-z0-9]+-)*{_FLAG_WORDS}$", re.IGNORECASE)


def secret_name(name: str) -> bool:
    """True for names whose values are secrets: HF_TOKEN, api_key, dbPassword, client-secret."""
    words = [w.lower() for w in _WORDS.split(_CAMEL.sub("_", name)) if w]
    if not words or len(name) > 80:
        return False
    last = words[-1]
    if last in _NOT_SECRET_LAST:
        return False
    if last in ("keys", "key") and len(words) == 1:  # a document's "key" field names a thing
        return False
    if any(w in ("public", "pub", "pubkey") for w in words):  # public_key, key.pub: not secret
        return False
    if len(words) > 1 and words[-2] in _COUNTING:  # nll_per_token, max_token, num_keys
        return False
    return last in _SECRET_LAST or any(w in _SECRET_ANY for w in words)


class StarBook:
    """Stand-ins that say only that something was removed: `***`."""

    hits = 0

    def stand_in(self, kind: str, value: str) -> str:
        self.hits += 1
        return "***"


@dataclass
class SecretBook:
    """The stand-ins handed out so far: one per distinct secret value, numbered per kind."""

    by_digest: dict[str, str] = field(default_factory=dict)  # sha256 (16 hex) → stand-in
    kinds: dict[str, str] = field(default_factory=dict)  # stand-in → kind
    counters: dict[str, int] = field(default_factory=dict)
    hits: int = 0
    # values seen in this process (memory only, never written): a secret found once, say after
    # `--api-key`, is replaced wherever it turns up later, also where no pattern would find it
    known: dict[str, str] = field(default_factory=dict, repr=False)

    @staticmethod
    def rememberable(value: str) -> bool:
        """Whether a replaced value is also replaced wherever it turns up later: only values
        shaped like credentials (no whitespace, long enough, not a plain word), so that a
        false positive (`bearer credentials` in prose) never spreads through every later line."""
        if len(value) < KNOWN_MIN or any(c.isspace() for c in value):
            return False
        if value.isalpha() and len(value) < 24:
            return False  # a word (directory, separated, credentials), not a key
        return True

    def stand_in(self, kind: str, value: str) -> str:
        self.hits += 1
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        known = self.by_digest.get(digest)
        if known is not None:
            if self.rememberable(value) and len(self.known) < KNOWN_MAX:
                self.known.setdefault(value, known)
            return known
        number = self.counters.get(kind, 0) + 1
        self.counters[kind] = number
        token = f"{STAND_IN_PREFIX}{kind}-{number}"
        self.by_digest[digest] = token
        self.kinds[token] = kind
        if self.rememberable(value) and len(self.known) < KNOWN_MAX:
            self.known[value] = token
        return token


_SHAPES = [
    ("openai-key", r"\bsk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_-]{16,}"),
    ("hf-token", r"\bhf_[A-Za-z0-9]{16,}"),
    ("ngc-key", r"\bnvapi-[A-Za-z0-9_-]{20,}"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("google-key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("aws-access-key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}\b"),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
]
SHAPE = re.compile("|".join(f"(?P<{k.replace('-', '_')}>{p})" for k, p in _SHAPES))
_PEM_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----")
_PEM_BLOCK = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----.*?(?:-----END \1PRIVATE KEY\2-----|\Z)",
    re.DOTALL)
_PEM_END = re.compile(r"-----END ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----")
_URL_PASSWORD = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)([^\s:/?#@\"']+):([^\s/?#@\"']+)@")
_BEARER = re.compile(r"(?i)\b((?:proxy-)?authorization\s*[:=]\s*[\"']?"
                     r"(?:(?:bearer|basic|token|apikey|digest)\s+)?|bearer\s+)([A-Za-z0-9._~+/=-]{6,})")
_FLAG = re.compile(rf"(?i)(?<![A-Za-z0-9])(--?(?:[a-z0-9]+-)*{_FLAG_WORDS})(\s+|=)([\"']?)"
                   r"([^\s\"'-][^\s\"']*)")
_FLAG_LISTED = re.compile(  # an argv printed as a list: ["--api-key", "VALUE"]
    rf"(?i)([\"'])(--?(?:[a-z0-9]+-)*{_FLAG_WORDS})\1(\s*,\s*)([\"'])([^\"'\n]+)\4")
_ASSIGN = re.compile(
    r"(?<![A-Za-z0-9_/.-])([\"']?)([A-Za-z_][A-Za-z0-9_.-]{0,79})\1(\s*[=:]\s*)(\[?\s*)"
    r"(?:\"([^\"\n]*)\"|'([^'\n]*)'|([^\s\"',;)}\]]+))")
_METAVAR = re.compile(r"^(?:[A-Z][A-Z_]{0,15}|<[a-z_|-]{1,16}>|\[[a-z_|-]{1,16}\])\Z")  # --api-key TEXT
_KEY_MATERIAL = re.compile(r"^[A-Za-z0-9+/]{40,}={0,2}\Z")
_TRIGGER = re.compile(
    r"(?i)-----|://|bearer|authori[sz]ation|--|sk-|hf_|nvapi-|gh[pousr]_|github_pat|glpat-|xox"
    r"|AIza|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|eyJ|[=:]")


def _looks_like_key_material(text: str) -> bool:
    """A bare base64 line (a PEM body line): long, mixed case and digits, not plain hex."""
    stripped = text.strip()
    if len(stripped) < 40 or not _KEY_MATERIAL.match(stripped):
        return False
    has = (any(c.isdigit() for c in stripped), any(c.islower() for c in stripped),
           any(c.isupper() for c in stripped))
    return all(has) and not re.fullmatch(r"[0-9a-fA-F]+", stripped)


class SecretScrubber:
    """Replaces secrets in strings; stateful across the strings of one file (PEM blocks)."""

    MAX_BLOCK_STRINGS = 200

    def __init__(self, book: SecretBook | StarBook) -> None:
        self.book = book
        self._in_block = 0  # >0 while inside a private key block split over several strings

    @property
    def in_block(self) -> bool:
        return self._in_block > 0

    def reset(self) -> None:
        """Call at every file boundary."""
        self._in_block = 0

    def replace(self, kind: str, value: str) -> str:
        """The stand-in for one secret value (placeholders and stand-ins, ours or the capture's
        `***<hex>`, and reproduce's `<supply:NAME>` placeholders are left alone)."""
        if (value.startswith(STAND_IN_PREFIX) or value.startswith("***")
                or _SUPPLY.fullmatch(value)
                or value.strip().lower() in _PLACEHOLDERS):
            return value
        return self.book.stand_in(kind, value)

    def scrub(self, text: str) -> str:
        """The text with every secret replaced by its stand-in."""
        if self._in_block:
            end = _PEM_END.search(text)
            self._in_block = 0 if end or self._in_block >= self.MAX_BLOCK_STRINGS else self._in_block + 1
            if end:
                return self.replace("private-key", text[:end.end()]) + self.scrub(text[end.end():])
            return self.replace("private-key", text)
        if not text or not _TRIGGER.search(text):
            if _looks_like_key_material(text):
                return self.replace("key-material", text)
            return self._known(text)
        if "-----BEGIN" in text:
            text = _PEM_BLOCK.sub(lambda m: self._pem(m), text)
        text = _URL_PASSWORD.sub(
            lambda m: m.group(1) + m.group(2) + ":" + self.replace("url-password", m.group(3)) + "@",
            text)
        text = _BEARER.sub(lambda m: m.group(1) + self.replace("bearer", m.group(2)), text)
        text = _FLAG.sub(lambda m: m.group(0) if _METAVAR.match(m.group(4)) else (
            m.group(1) + m.group(2) + m.group(3)
            + self.replace("flag-" + _flag_kind(m.group(1)), m.group(4))), text)
        if "," in text:
            text = _FLAG_LISTED.sub(lambda m: m.group(0)[:m.start(5) - m.start(0)]
                                    + self.replace("flag-" + _flag_kind(m.group(2)), m.group(5))
                                    + m.group(4), text)
        text = SHAPE.sub(lambda m: self.replace(m.lastgroup.replace("_", "-"), m.group(0)), text)
        text = self._assignments(text)
        if _looks_like_key_material(text):
            return self.replace("key-material", text)
        return self._known(text)

    def _known(self, text: str) -> str:
        """Secrets this run already found elsewhere, replaced by their stand-ins."""
        known = getattr(self.book, "known", None)
        if known:
            for value, token in known.items():
                if value in text:
                    text = text.replace(value, token)
        return text

    def _pem(self, match: re.Match) -> str:
        block = match.group(0)
        if not _PEM_END.search(block):
            self._in_block = 1
        label = (match.group(1) or "").strip()
        head = f"-----SCRUBBED {label + ' ' if label else ''}PRIVATE KEY-----"
        return head + " " + self.replace("private-key", block)

    def _assignments(self, text: str) -> str:
        """Values of secret-looking names replaced. A match with an ordinary name consumes only
        up to its separator, so that an assignment inside its value ("failed: password=...",
        "args: Namespace(api_key='...')") is still seen."""
        out, pos = [], 0
        while True:
            match = _ASSIGN.search(text, pos)
            if match is None:
                out.append(text[pos:])
                return "".join(out)
            if not secret_name(match.group(2)):
                out.append(text[pos:match.end(3)])
                pos = match.end(3)
                continue
            for index in (5, 6, 7):
                value = match.group(index)
                if value is not None:
                    out.append(text[pos:match.start(index)])
                    out.append(self.replace("secret", value) if value else value)
                    out.append(text[match.end(index):match.end(0)])
                    break
            else:
                out.append(text[pos:match.end(0)])
            pos = match.end(0)


class KeyBlocks:
    """Follows private key blocks through a stream of lines (a log, line by line, each with its
    own prefix): `inside(text)` is True from a `BEGIN ... PRIVATE KEY` line through its END line
    (at most MAX_LINES lines). Cheap on other lines: one substring test."""

    MAX_LINES = 200

    def __init__(self) -> None:
        self._open = 0

    def inside(self, text: str) -> bool:
        if self._open:
            self._open = 0 if _PEM_END.search(text) or self._open >= self.MAX_LINES else self._open + 1
            return True
        if "PRIVATE KEY" in text and (begin := _PEM_BEGIN.search(text)) is not None:
            if not _PEM_END.search(text, begin.end()):
                self._open = 1
            return True
        return False


def _flag_kind(flag: str) -> str:
    return flag.lstrip("-").lower()
