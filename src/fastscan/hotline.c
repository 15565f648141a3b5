/* hotline.c: reading a hot line in full (the grammar of the Python path's common shapes).

   A hot line is the periodic stats line or the SpecDecoding line of vLLM 0.11-0.33 in its common
   form, or a WARNING line (folded only when Python registered its exact message), each with
   vLLM's "(Name pid=N) LEVEL MM-DD HH:MM:SS [file:line] " prefix or the same without the process
   group. The grammar accepts printable ASCII only, to the end of the line; numbers are converted
   exactly (an integer below 2^53 divided by a power of ten: Python's float() of the same text).
   Anything else is not a hot line and is left to Python. */

#include "fastscan.h"

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15};

typedef struct {
    const uint8_t *p, *e;
} Cur;

#define INLINE static inline __attribute__((always_inline))

INLINE int lit_n(Cur *c, const char *s, size_t n) {
    if ((size_t)(c->e - c->p) < n) return 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) { /* literals are short: compare in words, inline */
        uint64_t a, b;
        memcpy(&a, c->p + i, 8);
        memcpy(&b, s + i, 8);
        if (a != b) return 0;
    }
    for (; i < n; i++)
        if (c->p[i] != (uint8_t)s[i]) return 0;
    c->p += n;
    return 1;
}
#define lit(c, s) lit_n((c), (s), sizeof(s) - 1)

INLINE int digits(Cur *c, int lo, int hi, long long *out) {
    long long v = 0;
    int n = 0;
    while (c->p < c->e && (unsigned)(*c->p - '0') < 10 && n < hi) {
        v = v * 10 + (*c->p - '0');
        c->p++;
        n++;
    }
    if (n < lo || (c->p < c->e && (unsigned)(*c->p - '0') < 10)) return 0;
    if (out) *out = v;
    return 1;
}

/* a decimal with `ip` integer digits (lo..hi) and exactly `fd` fraction digits; with
   fd < 0, "digits[.digits]" as the stats line's [\d.]+ (at most 15 digits in all). The value
   is exact: an integer below 2^53 divided by a power of ten (one correctly rounded division,
   as Python's float() of the same text). */
INLINE int decimal(Cur *c, int lo, int hi, int fd, double *out) {
    long long ipart, f = 0;
    const uint8_t *start = c->p;
    if (!digits(c, lo, hi, &ipart)) return 0;
    int idig = (int)(c->p - start), k = 0;
    if (fd != 0) {
        if (c->p < c->e && *c->p == '.') {
            c->p++;
            const uint8_t *fs = c->p;
            if (!digits(c, 1, fd > 0 ? fd : 15, &f)) return 0;
            k = (int)(c->p - fs);
            if (fd > 0 && k != fd) return 0;
        } else if (fd > 0) {
            return 0;
        }
    }
    if (idig + k > 15) return 0;
    *out = (double)(ipart * (long long)POW10[k] + f) / POW10[k];
    return 1;
}

INLINE int at_end(Cur *c) { return c->p == c->e; }

/* "(Name pid=N) LEVEL MM-DD HH:MM:SS [file:line] " (or the same without the process group) */
enum { C_NAME = 1, C_FILE = 2, C_DIGIT = 4, C_NAME0 = 8 };
static uint8_t CLS[256]; /* byte classes of the prefix grammar (filled at module init) */

void fs_init_classes(void) {
    for (int ch = 0; ch < 256; ch++) {
        uint8_t k = 0;
        if (tag_char((uint8_t)ch) || ch == ':') k |= C_NAME;
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_') k |= C_NAME0;
        if (ch > 0x20 && ch < 0x7f && ch != ']') k |= C_FILE;
        if (ch >= '0' && ch <= '9') k |= C_DIGIT;
        CLS[ch] = k;
    }
}

static int parse_prefix(Cur *c, Hot *h) {
    if (c->p < c->e && *c->p == '(') { /* (Name pid=N) */
        c->p++;
        if (c->p >= c->e || !(CLS[*c->p] & C_NAME0)) return 0;
        while (c->p < c->e && (CLS[*c->p] & C_NAME)) c->p++;
        if (!lit(c, " pid=") || !digits(c, 1, 10, NULL) || !lit(c, ") ")) return 0;
    }
    if (lit(c, "INFO ")) h->level = 1;
    else if (lit(c, "DEBUG ")) h->level = 2;
    else if (lit(c, "WARNING ")) h->level = 3;
    else return 0;
    const uint8_t *q = c->p; /* "MM-DD HH:MM:SS [" */
#define D(i) (CLS[q[i]] & C_DIGIT)
    if (c->e - q < 16 || !(D(0) && D(1) && q[2] == '-' && D(3) && D(4) && q[5] == ' ' && D(6) &&
                           D(7) && q[8] == ':' && D(9) && D(10) && q[11] == ':' && D(12) && D(13) &&
                           q[14] == ' ' && q[15] == '['))
        return 0;
#undef D
#define N(i) ((q[i] - '0') * 10 + (q[i + 1] - '0'))
    h->mo = N(0), h->day = N(3), h->hour = N(6), h->min = N(9), h->sec = N(12);
#undef N
    c->p += 16;
    /* [file:line]: printable ASCII without "]" or blanks; the line number follows the last ":" */
    const uint8_t *f = c->p, *colon = NULL;
    while (c->p < c->e && (CLS[*c->p] & C_FILE)) {
        if (*c->p == ':') colon = c->p;
        c->p++;
    }
    if (c->p < c->e && *c->p != ']') return 0;
    if (c->p >= c->e || !colon || colon == f) return 0;
    Py_ssize_t nd = c->p - colon - 1;
    if (nd < 1 || nd > 9) return 0;
    for (const uint8_t *q = colon + 1; q < c->p; q++)
        if (*q < '0' || *q > '9') return 0;
    c->p++;
    h->spaced = c->p < c->e && *c->p == ' ';
    if (h->spaced) c->p++;
    return 1;
}

static int parse_stats(Cur *c, Hot *h) {
    long long n;
    const uint8_t *mark = c->p;
    if (lit(c, "Engine ")) { /* str(int(digits)) */
        if (!digits(c, 1, 9, &n) || !lit(c, ": ")) return 0;
        char tmp[16];
        int k = 0;
        do {
            tmp[k++] = (char)('0' + n % 10);
            n /= 10;
        } while (n);
        for (int i = 0; i < k; i++) h->engine[i] = tmp[k - 1 - i];
        h->engine_len = k;
    } else if (c->p < c->e && *c->p >= '0' && *c->p <= '9') { /* "aggregated(digits)" */
        const uint8_t *d = c->p;
        if (!digits(c, 1, 9, NULL)) return 0;
        int nd = (int)(c->p - d);
        if (!lit(c, " Engines Aggregated: ")) return 0;
        memcpy(h->engine, "aggregated(", 11);
        memcpy(h->engine + 11, d, nd);
        h->engine[11 + nd] = ')';
        h->engine_len = 12 + nd;
    } else {
        c->p = mark;
        memcpy(h->engine, "0", 2);
        h->engine_len = 1;
    }
    if (!lit(c, "Avg prompt throughput: ") || !decimal(c, 1, 15, -1, &h->prompt) ||
        !lit(c, " tokens/s, Avg generation throughput: ") || !decimal(c, 1, 15, -1, &h->gen) ||
        !lit(c, " tokens/s, Running: ") || !digits(c, 1, 9, &h->running) ||
        !lit(c, " reqs, Waiting: ") || !digits(c, 1, 9, &h->waiting) || !lit(c, " reqs, "))
        return 0;
    if (c->e - c->p < 3 || c->p[1] != 'P' || c->p[2] != 'U' || !strchr("GCXTHN", c->p[0]) || !c->p[0])
        return 0;
    c->p += 3; /* GPU, CPU, XPU, TPU, HPU or NPU */
    if (!lit(c, " KV cache usage: ") || !decimal(c, 1, 3, 1, &h->kv) || !lit(c, "%"))
        return 0;
    h->has_prefix = 0;
    if (lit(c, ", Prefix cache hit rate: ")) {
        if (!decimal(c, 1, 3, 1, &h->prefix) || !lit(c, "%")) return 0;
        h->has_prefix = 1;
    }
    h->kind = 1;
    return at_end(c);
}

static int parse_spec(Cur *c, Hot *h) {
    if (!lit(c, "SpecDecoding metrics: Mean acceptance length: ") || !decimal(c, 1, 6, 2, &h->mal) ||
        !lit(c, ", Accepted throughput: ") || !decimal(c, 1, 9, 2, &h->acc_tps) ||
        !lit(c, " tokens/s, Drafted throughput: ") || !decimal(c, 1, 9, 2, &h->dra_tps) ||
        !lit(c, " tokens/s, Accepted: ") || !digits(c, 1, 15, &h->acc) ||
        !lit(c, " tokens, Drafted: ") || !digits(c, 1, 15, &h->dra) ||
        !lit(c, " tokens, Per-position acceptance rate: "))
        return 0;
    h->npos = 0;
    if (c->p < c->e && *c->p >= '0' && *c->p <= '9') {
        do {
            if (h->npos >= MAX_POS || !decimal(c, 1, 1, 3, &h->pos[h->npos])) return 0;
            h->npos++;
        } while (c->e - c->p > 2 && c->p[0] == ',' && c->p[1] == ' ' && c->p[2] >= '0' &&
                 c->p[2] <= '9' && (c->p += 2));
    }
    if (!lit(c, ", Avg Draft acceptance rate: ")) return 0;
    h->pct_nan = 0;
    if (lit(c, "nan")) h->pct_nan = 1;
    else if (!decimal(c, 1, 3, 1, &h->pct)) return 0;
    if (!lit(c, "%")) return 0;
    h->kind = 2;
    return at_end(c);
}

/* A hot line in [p, e) (without its newline)? Fills h; 0 when it is anything else. */
int fs_parse_hot(const uint8_t *p, const uint8_t *e, int crlf, Hot *h) {
    if (crlf && e > p && e[-1] == '\r') e--;  /* a Windows file: the line's own CR */
    if (e - p > HOT_MAX_LINE) return 0;
    /* The grammar below accepts printable ASCII only, to the end of the line: no ESC, no CR. */
    Cur c = {p, e};
    if (!parse_prefix(&c, h)) return 0;
    if (h->level == 3) { /* a warning: printable ASCII to the end */
        for (const uint8_t *q = c.p; q < c.e; q++)
            if (*q < 0x20 || *q >= 0x7f) return 0;
        h->kind = 3;
        h->msg = c.p;
        h->msg_len = c.e - c.p;
        return 1;
    }
    if (c.p < c.e && *c.p == 'S') return parse_spec(&c, h);
    return parse_stats(&c, h);
}
