/* _fastscan: the compiled fast path of `sparktriage logs` (docs/logs.md, "The compiled scanner").

   Scanner  finds the lines of a block of raw log bytes that pass the analysis gate of
            evidence/gate.py, in one pass: a vector prefilter (16 bytes, 32 with AVX2) on a pair
            of adjacent bytes of every needle (the "]" of vLLM's "[file.py:N] ", the JSON formatter's "message" key, the
            gate literals), newline counting on the way, an exact check at each hit.
   HotState holds, while the Python analysis lends it, the state that the two hot line shapes
            touch (the periodic stats line and the SpecDecoding line, 0.11-0.33, in their
            common form): Scanner.next() parses such lines in full and folds them in directly,
            so Python sees only the rare lines. evidence/hotlink.py lends and takes back.

   Contract: every read stays inside [pos, end) of the caller's buffer (bounds are checked
   before every access), nothing here raises on content, and a hot line is folded in only when
   the Python path would do exactly the same with it (anything unusual is handed to Python).
   Floating point follows Python's: one IEEE double operation per Python operation, no
   contraction (built with -ffp-contract=off), decimals converted exactly. */

#define PY_SSIZE_T_CLEAN
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memrchr */
#endif
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAX_STARTS 160
#define MAX_ENGINES 64
#define MAX_DIFFS 64
#define MAX_POS 64
#define HOT_MAX_LINE 4096
#define HOUR_CACHE 16
#define KNOWN_SLOTS 512 /* known warning messages: an open-addressing table, at most half full */

enum { OP_END = 0, OP_LIT = 1, OP_DIGIT = 2, OP_DIGITS = 3, OP_UPPER = 4, OP_OPT = 5, OP_ANY = 6 };

/* ------------------------------------------------------------------ Scanner */

#define NPAIR 8 /* "]", the JSON key, six literals: the prefilter tests exactly this many */

typedef struct {
    uint8_t x, y, o; /* the needle has bytes x, y at offsets o, o+1 ("]": x alone) */
} Pair;

typedef struct Scanner Scanner;
typedef const uint8_t *(*vscan_fn)(const Scanner *, const uint8_t *, const uint8_t *,
                                   const uint8_t *, const uint8_t **, Py_ssize_t *);

struct Scanner {
    PyObject_HEAD
    uint8_t *code;                    /* gate programs (message starts), each ends in OP_END */
    int nstarts;
    int start_at[MAX_STARTS];
    uint8_t first[MAX_STARTS][32];    /* bitmap of the bytes each program can start with */
    uint8_t any_first[256];
    int nlit;
    uint8_t *lit[NPAIR - 2];
    int litlen[NPAIR - 2];
    Pair pair[NPAIR];
    uint8_t nib[4][16];               /* AVX2 classifier: needle bits by low/high nibble */
    int maxoff;
    vscan_fn vscan;
    const char *kernel;
    int hot_gated, warn_gated;        /* the gate passes every hot line (stats/spec; warnings) */
};

static int prog_match(const uint8_t *c, const uint8_t *p, const uint8_t *end) {
    for (;;) {
        switch (c[0]) {
        case OP_END:
            return 1;
        case OP_LIT:
            if (end - p < c[1] || memcmp(p, c + 2, c[1]) != 0) return 0;
            p += c[1];
            c += 2 + c[1];
            break;
        case OP_ANY:
            if (p >= end || *p == '\n') return 0;
            p++;
            c++;
            break;
        case OP_DIGIT:
            if (p >= end || *p < '0' || *p > '9') return 0;
            p++;
            c++;
            break;
        case OP_DIGITS: { /* [0-9]+, greedy with backtracking */
            const uint8_t *q = p;
            while (q < end && *q >= '0' && *q <= '9') q++;
            for (; q > p; q--)
                if (prog_match(c + 1, q, end)) return 1;
            return 0;
        }
        case OP_UPPER:
            for (int i = 0; i < c[1]; i++, p++)
                if (p >= end || *p < 'A' || *p > 'Z') return 0;
            c += 2;
            break;
        case OP_OPT: /* (?:literal)? */
            if (end - p >= c[1] && memcmp(p, c + 2, c[1]) == 0 &&
                prog_match(c + 2 + c[1], p + c[1], end))
                return 1;
            c += 2 + c[1];
            break;
        default:
            return 0;
        }
    }
}

static int starts_at(const Scanner *s, const uint8_t *p, const uint8_t *end) {
    if (p >= end || !s->any_first[*p]) return 0;
    for (int i = 0; i < s->nstarts; i++)
        if ((s->first[i][*p >> 3] >> (*p & 7)) & 1 && prog_match(s->code + s->start_at[i], p, end))
            return 1;
    return 0;
}

static int tag_char(uint8_t c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
}

/* "(?:\[tag\] )?(?:STARTS)" at p */
static int body_match(const Scanner *s, const uint8_t *p, const uint8_t *end) {
    if (starts_at(s, p, end)) return 1;
    if (p < end && *p == '[') {
        const uint8_t *q = p + 1;
        while (q < end && tag_char(*q)) q++;
        if (q > p + 1 && end - q >= 2 && q[0] == ']' && q[1] == ' ') return starts_at(s, q + 2, end);
    }
    return 0;
}

/* "\](?:\x1b\[[0-9;]*m)? " + body, at the "]" in p */
static int bracket_match(const Scanner *s, const uint8_t *p, const uint8_t *end) {
    const uint8_t *q = p + 1;
    if (q < end && *q == 0x1b) {
        if (end - q < 2 || q[1] != '[') return 0;
        q += 2;
        while (q < end && ((*q >= '0' && *q <= '9') || *q == ';')) q++;
        if (q >= end || *q != 'm') return 0;
        q++;
    }
    if (q >= end || *q != ' ') return 0;
    return body_match(s, q + 1, end);
}

/* "\"message\": ?\"" + body, at the quote in p */
static int json_match(const Scanner *s, const uint8_t *p, const uint8_t *end) {
    static const char key[] = "\"message\":";
    if (end - p < 10 || memcmp(p, key, 10) != 0) return 0;
    const uint8_t *q = p + 10;
    if (q < end && *q == ' ') q++;
    if (q >= end || *q != '"') return 0;
    return body_match(s, q + 1, end);
}

static int needle_at(const Scanner *s, const uint8_t *p, const uint8_t *end) {
    if (*p == ']' && bracket_match(s, p, end)) return 1;
    if (*p == '"' && json_match(s, p, end)) return 1;
    for (int i = 0; i < s->nlit; i++)
        if (*p == s->lit[i][0] && end - p >= s->litlen[i] && memcmp(p, s->lit[i], s->litlen[i]) == 0)
            return 1;
    return 0;
}

/* The start of the line holding q (never before base). */
static const uint8_t *line_start(const uint8_t *base, const uint8_t *q) {
#ifdef __GLIBC__
    const uint8_t *nl = memrchr(base, '\n', q - base);
    return nl ? nl + 1 : base;
#else
    while (q > base && q[-1] != '\n') q--;
    return q;
#endif
}

static Py_ssize_t count_nl(const uint8_t *p, const uint8_t *end) {
    Py_ssize_t n = 0;
    while (p < end && (p = memchr(p, '\n', end - p)) != NULL) {
        n++;
        p++;
    }
    return n;
}

/* The earliest needle start whose prefilter pair sits at q (or NULL). */
static const uint8_t *lane_hit(const Scanner *s, const uint8_t *base, const uint8_t *q,
                               const uint8_t *end) {
    const uint8_t *best = NULL;
    if ((*q == ']' && bracket_match(s, q, end)) || (*q == '"' && json_match(s, q, end))) best = q;
    for (int i = 0; i < s->nlit; i++) {
        const uint8_t *st = q - s->pair[i + 2].o;
        if (st >= base && (!best || st < best) && end - st >= s->litlen[i] &&
            memcmp(st, s->lit[i], s->litlen[i]) == 0)
            best = st;
    }
    return best;
}

/* The vector part of the search, for one vector width: from p, chunk by chunk, until a chunk
   holds a needle (*hit: the earliest needle start) or fewer than W + 1 bytes remain. Counts
   the newlines of the chunks it passes into *lines; returns where it stopped. */
#define VANY(v, W) __extension__({                                                   \
    uint64_t w_[(W) / 8], o_ = 0;                                                    \
    memcpy(w_, &(v), (W));                                                           \
    for (int i_ = 0; i_ < (W) / 8; i_++) o_ |= w_[i_];                               \
    o_ != 0;                                                                         \
})
#define VSUM(v, W) __extension__({                                                   \
    uint64_t w_[(W) / 8], s_ = 0, m_ = 0x00FF00FF00FF00FFull;                        \
    memcpy(w_, &(v), (W));                                                           \
    for (int i_ = 0; i_ < (W) / 8; i_++) s_ += (w_[i_] & m_) + ((w_[i_] >> 8) & m_); \
    (Py_ssize_t)((s_ * 0x0001000100010001ull) >> 48);                                \
})
#define DEFINE_VSCAN(NAME, VT, W, ATTR)                                                         \
    ATTR static const uint8_t *NAME(const Scanner *s, const uint8_t *base, const uint8_t *p,   \
                                    const uint8_t *stop, const uint8_t **hit,                  \
                                    Py_ssize_t *lines) {                                       \
        VT NL, Z, acc, X[NPAIR], Y[NPAIR];                                                     \
        memset(&NL, '\n', W);                                                                  \
        memset(&Z, 0, W);                                                                      \
        for (int k = 0; k < NPAIR; k++) {                                                      \
            memset(&X[k], s->pair[k].x, W);                                                    \
            memset(&Y[k], s->pair[k].y, W);                                                    \
        }                                                                                      \
        acc = Z;                                                                               \
        int rounds = 0;                                                                        \
        Py_ssize_t n = 0;                                                                      \
        *hit = NULL;                                                                           \
        while (stop - p >= (W) + 1) {                                                          \
            VT v0, v1, m;                                                                      \
            memcpy(&v0, p, W);                                                                 \
            memcpy(&v1, p + 1, W);                                                             \
            m = (VT)(v0 == X[0]);                                                              \
            _Pragma("GCC unroll 8") for (int k = 1; k < NPAIR; k++) m |=                       \
                (VT)(v0 == X[k]) & (VT)(v1 == Y[k]);                                           \
            if (__builtin_expect(VANY(m, W), 0)) {                                             \
                uint8_t lanes[W];                                                              \
                const uint8_t *best = NULL;                                                    \
                memcpy(lanes, &m, W);                                                          \
                for (int j = 0; j < (W); j++) {                                                \
                    const uint8_t *h = lanes[j] ? lane_hit(s, base, p + j, stop) : NULL;       \
                    if (h && (!best || h < best)) best = h;                                    \
                }                                                                              \
                if (best) {                                                                    \
                    *hit = best;                                                               \
                    break;                                                                     \
                }                                                                              \
            }                                                                                  \
            acc -= (VT)(v0 == NL);                                                             \
            p += W;                                                                            \
            if (++rounds == 255) {                                                             \
                n += VSUM(acc, W);                                                             \
                acc = Z;                                                                       \
                rounds = 0;                                                                    \
            }                                                                                  \
        }                                                                                      \
        *lines += n + VSUM(acc, W);                                                            \
        return p;                                                                              \
    }

#if defined(__GNUC__)
#define HAVE_VEC 1
typedef uint8_t v16 __attribute__((vector_size(16)));
DEFINE_VSCAN(vscan16, v16, 16, )
#endif

#if defined(__GNUC__) && defined(__x86_64__)
#define HAVE_AVX2 1
#include <immintrin.h>

/* AVX2: each needle is one bit; a byte's class bits are looked up by its two nibbles
   (vpshufb), for the first byte of the pair at p and the second at p + 1. */
__attribute__((target("avx2"))) static const uint8_t *
vscan_avx2(const Scanner *s, const uint8_t *base, const uint8_t *p, const uint8_t *stop,
           const uint8_t **hit, Py_ssize_t *lines) {
    const __m256i lo0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)s->nib[0]));
    const __m256i hi0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)s->nib[1]));
    const __m256i lo1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)s->nib[2]));
    const __m256i hi1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)s->nib[3]));
    const __m256i F = _mm256_set1_epi8(0x0F), NL = _mm256_set1_epi8('\n'), Z = _mm256_setzero_si256();
    __m256i acc = Z;
    int rounds = 0;
    Py_ssize_t n = 0;
    *hit = NULL;
    while (stop - p >= 33) {
        __m256i v0 = _mm256_loadu_si256((const __m256i *)p);
        __m256i v1 = _mm256_loadu_si256((const __m256i *)(p + 1));
        __m256i a = _mm256_and_si256(_mm256_shuffle_epi8(lo0, _mm256_and_si256(v0, F)),
                                     _mm256_shuffle_epi8(hi0, _mm256_and_si256(_mm256_srli_epi16(v0, 4), F)));
        __m256i b = _mm256_and_si256(_mm256_shuffle_epi8(lo1, _mm256_and_si256(v1, F)),
                                     _mm256_shuffle_epi8(hi1, _mm256_and_si256(_mm256_srli_epi16(v1, 4), F)));
        __m256i m = _mm256_and_si256(a, b);
        if (__builtin_expect(!_mm256_testz_si256(m, m), 0)) {
            uint32_t lanes = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(m, Z));
            const uint8_t *best = NULL;
            while (lanes) {
                const uint8_t *h = lane_hit(s, base, p + __builtin_ctz(lanes), stop);
                if (h && (!best || h < best)) best = h;
                lanes &= lanes - 1;
            }
            if (best) {
                *hit = best;
                break;
            }
        }
        acc = _mm256_sub_epi8(acc, _mm256_cmpeq_epi8(v0, NL));
        p += 32;
        if (++rounds == 255) {
            __m256i sums = _mm256_sad_epu8(acc, Z);
            n += _mm256_extract_epi64(sums, 0) + _mm256_extract_epi64(sums, 1) +
                 _mm256_extract_epi64(sums, 2) + _mm256_extract_epi64(sums, 3);
            acc = Z;
            rounds = 0;
        }
    }
    __m256i sums = _mm256_sad_epu8(acc, Z);
    *lines += n + _mm256_extract_epi64(sums, 0) + _mm256_extract_epi64(sums, 1) +
              _mm256_extract_epi64(sums, 2) + _mm256_extract_epi64(sums, 3);
    return p;
}
#endif

static const uint8_t *vscan_none(const Scanner *s, const uint8_t *base, const uint8_t *p,
                                 const uint8_t *stop, const uint8_t **hit, Py_ssize_t *lines) {
    (void)s, (void)base, (void)stop, (void)lines;
    *hit = NULL;
    return p;
}

/* The first line in [pos, end) that passes the gate: its start, or -1. pos is a line start.
   *nl receives the newlines in [pos, start) (or in [pos, end) when there is none). */
static Py_ssize_t find_candidate(const Scanner *s, const uint8_t *buf, Py_ssize_t pos,
                                 Py_ssize_t end, Py_ssize_t *nl) {
    const uint8_t *base = buf + pos, *stop = buf + end, *p = base, *hit = NULL;
    Py_ssize_t lines = 0; /* newlines in [base, p) */
    p = s->vscan(s, base, p, stop, &hit, &lines);
    if (hit) { /* a needle that starts a little earlier may have its pair in the next chunk */
        for (const uint8_t *q = hit - s->maxoff > base ? hit - s->maxoff : base; q < hit; q++)
            if (needle_at(s, q, stop)) {
                hit = q;
                break;
            }
    } else { /* the bytes the vector part left, and needles whose pair lies among them */
        const uint8_t *q = p - s->maxoff > base ? p - s->maxoff : base;
        for (; q < stop; q++) {
            if (needle_at(s, q, stop)) {
                hit = q;
                break;
            }
            if (*q == '\n' && q >= p) lines++;
        }
        if (q > p) p = q;
    }
    if (!hit) {
        *nl = lines;
        return -1;
    }
    const uint8_t *ls = hit > base ? line_start(base, hit) : base;
    lines += ls >= p ? count_nl(p, ls) : -count_nl(ls, p);
    *nl = lines;
    return ls - buf;
}

static int get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t *pos, Py_ssize_t *end) {
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) return -1;
    if (*end < 0 || *end > view->len) *end = view->len;
    if (*pos < 0 || *pos > *end) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "position outside the buffer");
        return -1;
    }
    return 0;
}

static int Scanner_init(Scanner *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"starts", "literals", "pairs", "kernel", NULL};
    PyObject *starts, *literals, *pairs;
    const char *kernel = "auto";
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO|s", kwlist, &starts, &literals, &pairs, &kernel))
        return -1;
    starts = PySequence_Fast(starts, "starts: a sequence of programs");
    if (!starts) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(starts), total = 0;
    if (n > MAX_STARTS) {
        Py_DECREF(starts);
        PyErr_SetString(PyExc_ValueError, "too many message starts");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = PySequence_Fast_GET_ITEM(starts, i);
        if (!PyBytes_Check(b) || PyBytes_GET_SIZE(b) < 1) {
            Py_DECREF(starts);
            PyErr_SetString(PyExc_TypeError, "a program must be non-empty bytes");
            return -1;
        }
        total += PyBytes_GET_SIZE(b);
    }
    PyMem_Free(self->code);
    self->code = PyMem_Malloc(total + 1);
    if (!self->code) {
        Py_DECREF(starts);
        PyErr_NoMemory();
        return -1;
    }
    memset(self->any_first, 0, sizeof self->any_first);
    memset(self->first, 0, sizeof self->first);
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = PySequence_Fast_GET_ITEM(starts, i);
        Py_ssize_t len = PyBytes_GET_SIZE(b);
        const uint8_t *c = (const uint8_t *)PyBytes_AS_STRING(b);
        memcpy(self->code + at, c, len);
        self->start_at[i] = (int)at;
        for (int ch = 0; ch < 256; ch++) { /* which first bytes can begin a match */
            uint8_t one = (uint8_t)ch;
            const uint8_t *q = c;
            int can = 0;
            for (;;) {
                if (q[0] == OP_LIT) { can = q[1] > 0 && q[2] == one; break; }
                if (q[0] == OP_DIGIT || q[0] == OP_DIGITS) { can = one >= '0' && one <= '9'; break; }
                if (q[0] == OP_UPPER) { can = one >= 'A' && one <= 'Z'; break; }
                if (q[0] == OP_ANY) { can = one != '\n'; break; }
                if (q[0] == OP_OPT) {
                    if (q[1] > 0 && q[2] == one) { can = 1; break; }
                    q += 2 + q[1];
                    continue;
                }
                can = q[0] == OP_END;
                break;
            }
            if (can) {
                self->first[i][ch >> 3] |= (uint8_t)(1 << (ch & 7));
                self->any_first[ch] = 1;
            }
        }
        at += len;
    }
    self->nstarts = (int)n;
    Py_DECREF(starts);

    literals = PySequence_Fast(literals, "literals: a sequence of bytes");
    if (!literals) return -1;
    n = PySequence_Fast_GET_SIZE(literals);
    if (n > NPAIR - 2) {
        Py_DECREF(literals);
        PyErr_SetString(PyExc_ValueError, "too many literals");
        return -1;
    }
    for (int i = 0; i < self->nlit; i++) PyMem_Free(self->lit[i]);
    self->nlit = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = PySequence_Fast_GET_ITEM(literals, i);
        if (!PyBytes_Check(b) || PyBytes_GET_SIZE(b) < 2 || PyBytes_GET_SIZE(b) > 200 ||
            memchr(PyBytes_AS_STRING(b), '\n', PyBytes_GET_SIZE(b))) {
            Py_DECREF(literals);
            PyErr_SetString(PyExc_ValueError, "a literal must be 2-200 bytes without a newline");
            return -1;
        }
        self->lit[i] = PyMem_Malloc(PyBytes_GET_SIZE(b));
        if (!self->lit[i]) {
            Py_DECREF(literals);
            PyErr_NoMemory();
            return -1;
        }
        memcpy(self->lit[i], PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b));
        self->litlen[i] = (int)PyBytes_GET_SIZE(b);
        self->nlit = (int)i + 1;
    }
    Py_DECREF(literals);

    /* prefilter pairs: "]" alone, the JSON key's first two bytes, one adjacent pair per literal
       (at the offset Python chose), then copies of the first pair up to NPAIR */
    pairs = PySequence_Fast(pairs, "pairs: one offset per literal");
    if (!pairs) return -1;
    if (PySequence_Fast_GET_SIZE(pairs) != self->nlit) {
        Py_DECREF(pairs);
        PyErr_SetString(PyExc_ValueError, "one offset per literal");
        return -1;
    }
    self->pair[0] = (Pair){']', ']', 0};
    self->pair[1] = (Pair){'"', 'm', 0};
    self->maxoff = 1;
    for (int i = 0; i < self->nlit; i++) {
        long o = PyLong_AsLong(PySequence_Fast_GET_ITEM(pairs, i));
        if (o == -1 && PyErr_Occurred()) {
            Py_DECREF(pairs);
            return -1;
        }
        if (o < 0 || o + 1 >= self->litlen[i] || o > 64) {
            Py_DECREF(pairs);
            PyErr_SetString(PyExc_ValueError, "pair offset outside the literal");
            return -1;
        }
        self->pair[i + 2] = (Pair){self->lit[i][o], self->lit[i][o + 1], (uint8_t)o};
        if (o + 1 > self->maxoff) self->maxoff = (int)o + 1;
    }
    for (int k = self->nlit + 2; k < NPAIR; k++) self->pair[k] = self->pair[1];
    Py_DECREF(pairs);
    memset(self->nib, 0, sizeof self->nib);
    for (int k = 0; k < NPAIR; k++) {
        uint8_t bit = (uint8_t)(1 << k), x = self->pair[k].x, y = self->pair[k].y;
        self->nib[0][x & 15] |= bit;
        self->nib[1][x >> 4] |= bit;
        for (int i = 0; i < 16; i++) /* "]" alone: any second byte */
            if (k == 0 || i == (y & 15)) self->nib[2][i] |= bit;
        for (int i = 0; i < 16; i++)
            if (k == 0 || i == (y >> 4)) self->nib[3][i] |= bit;
    }
    /* Does the gate pass every hot line? Then a hot line right after a folded one needs no
       search (Scanner.next chains them). Checked here, on the gate as configured. */
    static const char *hot_starts[] = {"] Engine 0: ", "] 1 Engines Aggregated: ",
                                       "] Avg prompt throughput: ", "] SpecDecoding metrics: "};
    self->hot_gated = 1;
    for (int i = 0; i < 4; i++) {
        const uint8_t *t = (const uint8_t *)hot_starts[i];
        if (!bracket_match(self, t, t + strlen(hot_starts[i]))) self->hot_gated = 0;
    }
    self->warn_gated = 0;
    for (int i = 0; i < self->nlit; i++) {
        const char *w = "WARNING ";
        for (int at = 0; at + self->litlen[i] <= 8; at++)
            if (memcmp(w + at, self->lit[i], self->litlen[i]) == 0) self->warn_gated = 1;
    }
    /* kernel: "auto" (the fastest this CPU has), "avx2", "vector" (16-byte, portable), "scalar" */
    self->vscan = vscan_none;
    self->kernel = "scalar";
#ifdef HAVE_VEC
    if (strcmp(kernel, "scalar") != 0) {
        self->vscan = vscan16;
        self->kernel = "vector";
    }
#endif
#ifdef HAVE_AVX2
    if ((strcmp(kernel, "auto") == 0 || strcmp(kernel, "avx2") == 0) && __builtin_cpu_supports("avx2")) {
        self->vscan = vscan_avx2;
        self->kernel = "avx2";
    }
#endif
    if (strcmp(kernel, "auto") != 0 && strcmp(kernel, self->kernel) != 0) {
        PyErr_Format(PyExc_ValueError, "kernel %s is not available here", kernel);
        return -1;
    }
    return 0;
}

static void Scanner_dealloc(Scanner *self) {
    PyMem_Free(self->code);
    for (int i = 0; i < self->nlit; i++) PyMem_Free(self->lit[i]);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Scanner_candidates(Scanner *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t pos = 0, end = -1;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "O|nn", &obj, &pos, &end)) return NULL;
    if (get_buffer(obj, &view, &pos, &end) < 0) return NULL;
    const uint8_t *buf = view.buf;
    PyObject *out = PyList_New(0);
    if (!out) goto done;
    if (pos > 0 && buf[pos - 1] != '\n') { /* a line that began before pos is not ours */
        const uint8_t *nlp = memchr(buf + pos, '\n', end - pos);
        pos = nlp ? nlp - buf + 1 : end;
    }
    while (pos < end) {
        Py_ssize_t nl, start = find_candidate(self, buf, pos, end, &nl);
        if (start < 0) break;
        PyObject *v = PyLong_FromSsize_t(start);
        if (!v || PyList_Append(out, v) < 0) {
            Py_XDECREF(v);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(v);
        const uint8_t *nlp = memchr(buf + start, '\n', end - start);
        pos = nlp ? nlp - buf + 1 : end;
    }
done:
    PyBuffer_Release(&view);
    return out;
}

static PyObject *Scanner_count(Scanner *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t pos = 0, end = -1;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "O|nn", &obj, &pos, &end)) return NULL;
    if (get_buffer(obj, &view, &pos, &end) < 0) return NULL;
    Py_ssize_t n = count_nl((const uint8_t *)view.buf + pos, (const uint8_t *)view.buf + end);
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(n);
}

/* uvicorn's "LEVEL:<space>" lines and empty lines never carry a time stamp (lineformat.py) */
static int surely_unstamped(const uint8_t *p, const uint8_t *e) {
    static const char *levels[] = {"INFO: ", "WARNING: ", "ERROR: ", "DEBUG: ", "CRITICAL: ",
                                   "TRACE: "};
    if (p == e) return 1;
    for (int i = 0; i < 6; i++) {
        size_t n = strlen(levels[i]);
        if ((size_t)(e - p) >= n && memcmp(p, levels[i], n) == 0) return 1;
    }
    return 0;
}

/* skip_unstamped(buf, lo, hi) -> (hi, skipped): walk back from the line that ends at hi (the
   newline after it, or the block end) over lines that surely carry no stamp, never before lo. */
static PyObject *Scanner_skip_unstamped(Scanner *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t lo, hi, end = -1, skipped = 0;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "Onn", &obj, &lo, &hi)) return NULL;
    if (get_buffer(obj, &view, &lo, &end) < 0) return NULL;
    const uint8_t *buf = view.buf;
    if (hi > end) hi = end;
    while (hi > lo) {
        Py_ssize_t begin = hi;
        while (begin > lo && buf[begin - 1] != '\n') begin--;
        if (!surely_unstamped(buf + begin, buf + hi)) break;
        if (begin == lo) {
            hi = lo - 1; /* nothing left: the caller stops */
            skipped++;
            break;
        }
        hi = begin - 1;
        skipped++;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("nn", hi, skipped);
}

/* ------------------------------------------------------------------ hot lines */

typedef struct {
    long long n, active;
    double total, total_active, peak; /* peak: NaN = None */
} Rates;

typedef struct {
    char name[32];
    int len;
    PyObject *str; /* the engine's name as the Python path spells it */
    double last;   /* time of its previous stats line; NaN = none */
    int touched;
} Engine;

typedef struct {
    double key;
    long long count;
} Diff;

typedef struct {
    PyObject_HEAD
    int loaded, dirty;
    /* the source */
    PyObject *node;                 /* str */
    int crlf;
    /* StampClock */
    PyObject *hour_base;            /* callable(year, month, day, hour) -> float | None */
    long long year;
    double clock_last;              /* NaN = None */
    long long hour_key[HOUR_CACHE];
    double hour_val[HOUR_CACHE];    /* NaN: not a real hour */
    /* analyzer counters (deltas since the last load) */
    long long events, n_level[4];   /* by level: 1 INFO, 2 DEBUG, 3 WARNING */
    int level_order[3], nlevels;    /* levels in the order they were first counted */
    long long n_warning;            /* Facts.warnings_total */
    /* known warnings: messages Python analysed once and found to do nothing but count */
    struct {
        uint8_t *msg;
        Py_ssize_t len;
        uint64_t hash;
        PyObject *entry;            /* the Facts.warnings entry whose "count" they raise */
        long long delta;
    } known[KNOWN_SLOTS];
    int nknown;
    double t_min, t_max;
    /* the last hot line (Python rebuilds its event for the timeline): where it is in the
       current buffer, or (last_start < 0) a copy of it */
    Py_ssize_t last_start, last_end;
    PyObject *last_copy;
    long long last_line_no;
    double last_t;
    /* StatsSeries */
    Rates gen, prompt;
    Engine engine[MAX_ENGINES];
    int nengines;
    PyObject *diffs;                /* the Counter of rounded spacings (read only) */
    Py_ssize_t diffs_len;           /* its size at load */
    Diff diff[MAX_DIFFS];
    int ndiff;
    PyObject *stats_windows, *stats_cls;
    Py_ssize_t stats_keep;
    /* SpecSeries */
    long long spec_n, accepted, drafted;
    double drafts, peak_tps;        /* peak_tps: NaN = None */
    double per_pos[MAX_POS];
    int npos;
    PyObject *spec_windows, *spec_cls;
    Py_ssize_t spec_keep;
} HotState;

typedef struct {
    int kind;            /* 1 stats, 2 spec, 3 a WARNING line (folded when its message is known) */
    int level;           /* 1 INFO, 2 DEBUG, 3 WARNING */
    const uint8_t *msg;  /* kind 3: the message */
    Py_ssize_t msg_len;
    int spaced;          /* "] " (not "]") ends the prefix */
    int mo, day, hour, min, sec;
    /* stats */
    char engine[32];
    int engine_len;
    double prompt, gen, kv, prefix;
    int has_prefix;
    long long running, waiting;
    /* spec */
    double mal, acc_tps, dra_tps, pct;
    int pct_nan;
    long long acc, dra;
    double pos[MAX_POS];
    int npos;
} Hot;

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

static void init_classes(void) {
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
static int parse_hot(const uint8_t *p, const uint8_t *e, int crlf, Hot *h) {
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

/* StampClock._unix: the hour's base from Python (cached here), then minutes and seconds */
static int hour_base(HotState *st, long long year, int mo, int day, int hour, double *out) {
    long long key = ((year * 13 + mo) * 32 + day) * 24 + hour;
    int slot = (int)(((unsigned long long)key * 0x9E3779B97F4A7C15ull) >> 60) % HOUR_CACHE;
    if (st->hour_key[slot] == key) {
        *out = st->hour_val[slot];
        return 0;
    }
    if (!st->hour_base) return -1;
    PyObject *r = PyObject_CallFunction(st->hour_base, "Liii", year, mo, day, hour);
    if (!r) return -1;
    double v = NAN;
    if (r != Py_None) {
        v = PyFloat_AsDouble(r);
        if (v == -1.0 && PyErr_Occurred()) {
            Py_DECREF(r);
            return -1;
        }
    }
    Py_DECREF(r);
    st->hour_key[slot] = key;
    st->hour_val[slot] = v;
    *out = v;
    return 0;
}

static int leap(long long y) { return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0); }

/* 1 and *t set, 0 when the stamp is not a real time, -1 on a Python error */
static int unix_time(HotState *st, long long year, const Hot *h, double *t) {
    if (h->mo == 2 && h->day == 29)
        while (!leap(year)) year--;
    double base;
    if (hour_base(st, year, h->mo, h->day, h->hour, &base) < 0) return -1;
    if (isnan(base) || h->min > 59 || h->sec > 60) return 0;
    *t = (base + (double)(60 * h->min)) + (double)(h->sec < 59 ? h->sec : 59);
    return 1;
}

#define HALF_YEAR (183 * 86400.0)

/* StampClock.from_stamp with a known year: (t, new year, new last); 0 = hand it to Python */
static int stamp_time(HotState *st, const Hot *h, double *t, long long *year, double *last) {
    int r = unix_time(st, st->year, h, t);
    if (r <= 0) return r;
    *year = st->year;
    *last = st->clock_last;
    if (!isnan(st->clock_last) && *t < st->clock_last - HALF_YEAR) {
        r = unix_time(st, st->year + 1, h, t);  /* Dec -> Jan */
        if (r <= 0) return r;
        *year = st->year + 1;
        *last = *t;
    } else if (!isnan(st->clock_last) && *t > st->clock_last + HALF_YEAR) {
        r = unix_time(st, st->year - 1, h, t);  /* a straggler from the year before */
        if (r <= 0) return r;
    } else {
        *last = *t;
    }
    *t = *t + 0.0;
    return 1;
}

static void rates_add(Rates *r, double v) {
    r->n++;
    r->total = r->total + v;
    if (v > 0) {
        r->active++;
        r->total_active = r->total_active + v;
    }
    if (isnan(r->peak) || v > r->peak) r->peak = v;
}

static PyObject *S_running, *S_waiting, *S_kv, *S_prefix, *S_parts, *S_mal, *S_acc_tps,
    *S_dra_tps, *S_accepted, *S_drafted, *S_pct, *S_level_info, *S_level_debug, *S_t, *S_engine,
    *S_prompt, *S_generation, *S_level, *S_node, *S_start, *S_start_estimated, *S_values,
    *S_per_position, *S_drafts, *S_drafts_exact, *S_empty, *S_empty_bytes, *S_end,
    *S_drafts_estimated, *S_round, *S_two;

static int set_item(PyObject *d, PyObject *k, PyObject *v) {
    if (!v) return -1;
    int r = PyDict_SetItem(d, k, v);
    Py_DECREF(v);
    return r;
}

/* An instance of a plain dataclass with its fields set, as `_make_event` does in Python: no
   __init__ call (the fields are exactly those the class's __init__ would set). Steals values. */
static PyObject *new_record(PyObject *cls, PyObject *const *names, PyObject **values, int n) {
    PyObject *obj = NULL, *dict = NULL;
    for (int i = 0; i < n; i++)
        if (!values[i]) goto done;
    if (!cls || !PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "the window class must be a class");
        goto done;
    }
    obj = PyBaseObject_Type.tp_new((PyTypeObject *)cls, S_empty, NULL);
    if (!obj) goto done;
    dict = PyObject_GenericGetDict(obj, NULL);
    if (!dict) {
        Py_CLEAR(obj);
        goto done;
    }
    for (int i = 0; i < n; i++)
        if (PyDict_SetItem(dict, names[i], values[i]) < 0) {
            Py_CLEAR(obj);
            break;
        }
done:
    Py_XDECREF(dict);
    for (int i = 0; i < n; i++) Py_XDECREF(values[i]);
    return obj;
}

static int append(PyObject *list, PyObject *item) {
    if (!item) return -1;
    int r = PyList_Append(list, item);
    Py_DECREF(item);
    return r;
}

/* StatsWindow(t, engine, prompt, generation, level, node, start=None, parts, start_estimated) */
static int keep_stats(HotState *st, const Hot *h, double t, PyObject *engine) {
    if (!st->stats_windows || !PyList_Check(st->stats_windows) ||
        PyList_GET_SIZE(st->stats_windows) >= st->stats_keep)
        return 0;
    PyObject *parts = PyDict_New();
    if (!parts) return -1;
    if (set_item(parts, S_running, PyLong_FromLongLong(h->running)) < 0 ||
        set_item(parts, S_waiting, PyLong_FromLongLong(h->waiting)) < 0 ||
        set_item(parts, S_kv, PyFloat_FromDouble(h->kv)) < 0 ||
        (h->has_prefix && set_item(parts, S_prefix, PyFloat_FromDouble(h->prefix)) < 0)) {
        Py_DECREF(parts);
        return -1;
    }
    PyObject *names[] = {S_t, S_engine, S_prompt, S_generation, S_level, S_node, S_start, S_parts,
                         S_start_estimated};
    PyObject *values[] = {PyFloat_FromDouble(t), Py_NewRef(engine), PyFloat_FromDouble(h->prompt),
                          PyFloat_FromDouble(h->gen),
                          Py_NewRef(h->level == 1 ? S_level_info : S_level_debug),
                          Py_NewRef(st->node), Py_NewRef(Py_None), parts, Py_NewRef(Py_False)};
    return append(st->stats_windows, new_record(st->stats_cls, names, values, 9));
}

/* SpecWindow(t, node, values, per_position, drafts, drafts_exact=False) */
static int keep_spec(HotState *st, const Hot *h, double t, int has_drafts, double drafts) {
    if (!st->spec_windows || !PyList_Check(st->spec_windows) ||
        PyList_GET_SIZE(st->spec_windows) >= st->spec_keep)
        return 0;
    PyObject *values = PyDict_New(), *pos = PyList_New(h->npos);
    if (!values || !pos) goto fail;
    for (int i = 0; i < h->npos; i++) {
        PyObject *f = PyFloat_FromDouble(h->pos[i]);
        if (!f) goto fail;
        PyList_SET_ITEM(pos, i, f);
    }
    if (set_item(values, S_mal, PyFloat_FromDouble(h->mal)) < 0 ||
        set_item(values, S_acc_tps, PyFloat_FromDouble(h->acc_tps)) < 0 ||
        set_item(values, S_dra_tps, PyFloat_FromDouble(h->dra_tps)) < 0 ||
        set_item(values, S_accepted, PyLong_FromLongLong(h->acc)) < 0 ||
        set_item(values, S_drafted, PyLong_FromLongLong(h->dra)) < 0 ||
        set_item(values, S_pct, h->pct_nan ? Py_NewRef(Py_None) : PyFloat_FromDouble(h->pct)) < 0)
        goto fail;
    PyObject *names[] = {S_t, S_node, S_values, S_per_position, S_drafts, S_drafts_exact};
    PyObject *fields[] = {PyFloat_FromDouble(t), Py_NewRef(st->node), values, pos,
                          has_drafts ? PyFloat_FromDouble(drafts) : Py_NewRef(Py_None),
                          Py_NewRef(Py_False)};
    return append(st->spec_windows, new_record(st->spec_cls, names, fields, 6));
fail:
    Py_XDECREF(values);
    Py_XDECREF(pos);
    return -1;
}

static Engine *find_engine(HotState *st, const Hot *h) {
    for (int i = 0; i < st->nengines; i++)
        if (st->engine[i].len == h->engine_len && memcmp(st->engine[i].name, h->engine, h->engine_len) == 0)
            return &st->engine[i];
    return NULL;
}

static Engine *add_engine(HotState *st, const char *name, int len) {
    if (st->nengines >= MAX_ENGINES || len >= 32) return NULL;
    PyObject *s = PyUnicode_FromStringAndSize(name, len);
    if (!s) return NULL;
    Engine *e = &st->engine[st->nengines++];
    memcpy(e->name, name, len);
    e->len = len;
    e->str = s;
    e->last = NAN;
    e->touched = 0;
    return e;
}

static uint64_t hash_bytes(const uint8_t *p, Py_ssize_t n) { /* FNV-1a */
    uint64_t h = 1469598103934665603ull;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* The slot of a known message, or of the empty slot where it would go. */
static int known_slot(const HotState *st, const uint8_t *msg, Py_ssize_t len, uint64_t hash) {
    int i = (int)(hash % KNOWN_SLOTS);
    while (st->known[i].msg &&
           !(st->known[i].hash == hash && st->known[i].len == len && memcmp(st->known[i].msg, msg, len) == 0))
        i = (i + 1) % KNOWN_SLOTS;
    return i;
}

static int find_known(const HotState *st, const Hot *h) {
    if (!st->nknown) return -1;
    int i = known_slot(st, h->msg, h->msg_len, hash_bytes(h->msg, h->msg_len));
    return st->known[i].msg ? i : -1;
}

/* Fold one parsed hot line in, exactly as LogAnalyzer.feed would with its event.
   1 done, 0 hand it to Python (nothing changed), -1 Python error. */
static int apply_hot(HotState *st, const Hot *h, Py_ssize_t start, Py_ssize_t end, long long line_no) {
    double t, last;
    long long year;
    int r = stamp_time(st, h, &t, &year, &last);
    if (r <= 0) return r;
    Engine *eng = NULL;
    int diff_slot = -1, count_diff = 0;
    double d = 0;
    int has_drafts = 0;
    double drafts = 0;
    long long acc_total = 0, dra_total = 0;
    int known = -1;
    if (h->kind == 3) {
        if ((known = find_known(st, h)) < 0) return 0;
    } else if (h->kind == 1) {
        eng = find_engine(st, h);
        if (!eng) {
            if (st->nengines >= MAX_ENGINES) return 0;
            if (!(eng = add_engine(st, h->engine, h->engine_len))) return PyErr_Occurred() ? -1 : 0;
        }
        if (!isnan(eng->last) && t >= eng->last) {
            Py_ssize_t len = st->diffs_len;
            d = t - eng->last;
            if (d != floor(d) || d > 9007199254740992.0) return 0;  /* round(d, 1) == d only here */
            for (int i = 0; i < st->ndiff; i++)
                if (st->diff[i].key == d) diff_slot = i;
            if (len < 100000) {
                count_diff = 1;
                if (diff_slot < 0 && st->ndiff >= MAX_DIFFS) return 0;
            }
        }
    } else {
        if (__builtin_add_overflow(st->accepted, h->acc, &acc_total) ||
            __builtin_add_overflow(st->drafted, h->dra, &dra_total))
            return 0;
        if (h->acc) {
            double total = 0.0;
            for (int i = 0; i < h->npos; i++) total = total + h->pos[i];
            if (total > 0) {
                has_drafts = 1;
                drafts = (double)h->acc / total;
            } else if (h->mal > 1) {
                has_drafts = 1;
                drafts = (double)h->acc / (h->mal - 1.0);
            }
        }
        if (!has_drafts && h->npos) {
            has_drafts = 1;
            drafts = (double)h->dra / (double)h->npos;
        }
    }
    /* commit: keep the window objects first (the only step that can fail) */
    if (h->kind == 3) {
        st->known[known].delta++;
        st->n_warning++;
    } else if (h->kind == 1) {
        if (keep_stats(st, h, t, eng->str) < 0) return -1;
        rates_add(&st->gen, h->gen);
        rates_add(&st->prompt, h->prompt);
        if (count_diff) {
            if (diff_slot < 0) {
                PyObject *key = PyFloat_FromDouble(d);
                if (!key) return -1;
                int known = PyDict_Contains(st->diffs, key);
                Py_DECREF(key);
                if (known < 0) return -1;
                diff_slot = st->ndiff++;
                st->diff[diff_slot].key = d;
                st->diff[diff_slot].count = 0;
                if (!known) st->diffs_len++;
            }
            st->diff[diff_slot].count++;
        }
        eng->last = t;
        eng->touched = 1;
    } else {
        if (keep_spec(st, h, t, has_drafts, drafts) < 0) return -1;
        st->spec_n++;
        st->accepted = acc_total;
        st->drafted = dra_total;
        if (has_drafts) {
            st->drafts = st->drafts + drafts;
            for (int i = 0; i < h->npos; i++) {
                if (i >= st->npos) st->per_pos[st->npos++] = 0.0;
                st->per_pos[i] = st->per_pos[i] + h->pos[i] * drafts;
            }
        }
        if (isnan(st->peak_tps) || h->acc_tps > st->peak_tps) st->peak_tps = h->acc_tps;
    }
    st->year = year;
    st->clock_last = last;
    st->events++;
    if (!st->n_level[h->level]++) st->level_order[st->nlevels++] = h->level;
    if (isnan(st->t_min) || t < st->t_min) st->t_min = t;
    if (isnan(st->t_max) || t > st->t_max) st->t_max = t;
    st->last_start = start;
    st->last_end = end;
    Py_CLEAR(st->last_copy);
    st->last_line_no = line_no;
    st->last_t = t;
    st->dirty = 1;
    return 1;
}

static PyTypeObject HotStateType;

/* next(buf, pos, end, line_no, state) -> (cand, fed, lines_fed, lines_to_cand, hot)

   From pos (a line start; line number line_no), fold the hot lines into `state` while it is
   lent (state.loaded), and stop at the first other line that passes the gate. cand is its start
   (-1: none before end); fed is where the folded lines end (pos when none); lines_fed counts the
   lines in [pos, fed), lines_to_cand those in [fed, cand) (or [fed, end)); hot is 1 when cand is
   a hot line left alone because the state is not lent. A line right after one that ends in the
   continuation mark ("\r\n"; "\r\r\n" in a Windows file) is never folded: Python joins it. */
static PyObject *Scanner_next(Scanner *self, PyObject *args) {
    PyObject *obj, *state;
    Py_ssize_t pos, end;
    long long line_no;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "OnnLO", &obj, &pos, &end, &line_no, &state)) return NULL;
    if (state != Py_None && !PyObject_TypeCheck(state, &HotStateType)) {
        PyErr_SetString(PyExc_TypeError, "state must be a HotState or None");
        return NULL;
    }
    if (end < 0) end = PY_SSIZE_T_MAX;
    if (get_buffer(obj, &view, &pos, &end) < 0) return NULL;
    const uint8_t *buf = view.buf;
    HotState *st = state == Py_None ? NULL : (HotState *)state;
    const char *mark = st && st->crlf ? "\r\r\n" : "\r\n";
    Py_ssize_t width = st && st->crlf ? 3 : 2;
    Py_ssize_t fed = pos, cur = pos, lines_fed = 0, acc = 0, cand = -1, nl, le = 0;
    int hot = 0, chained = 0;
    Hot h;
    for (;;) {
        Py_ssize_t start;
        const uint8_t *nlp;
        if (chained) { /* the line right after a folded one, already parsed */
            start = cur;
            nlp = le < end ? buf + le : NULL;
        } else {
            start = find_candidate(self, buf, cur, end, &nl);
            acc += nl;
            if (start < 0) break;
            nlp = memchr(buf + start, '\n', end - start);
            le = nlp ? nlp - buf : end;
        }
        cand = start;
        if (!chained &&
            (!st || (start - width >= fed && memcmp(buf + start - width, mark, width) == 0) ||
             !parse_hot(buf + start, buf + le, st->crlf, &h)))
            break;
        chained = 0;
        if (h.kind == 3 && find_known(st, &h) < 0) break; /* Python reads it */
        if (!st->loaded) {
            hot = 1;
            break;
        }
        int r = apply_hot(st, &h, start, le, line_no + lines_fed + acc);
        if (r < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
        if (r == 0) break;
        fed = cur = nlp ? le + 1 : end;
        lines_fed += acc + (nlp ? 1 : 0);
        acc = 0;
        cand = -1;
        if (self->hot_gated && cur < end) { /* a hot line passes the gate: no search needed */
            const uint8_t *n2 = memchr(buf + cur, '\n', end - cur);
            le = n2 ? n2 - buf : end;
            chained = parse_hot(buf + cur, buf + le, st->crlf, &h) &&
                      (h.kind == 3 ? self->warn_gated : h.spaced);
        }
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("nnnni", cand, fed, lines_fed, acc, hot);
}

static PyObject *Scanner_kernel(Scanner *self, void *unused) {
    (void)unused;
    return PyUnicode_FromString(self->kernel ? self->kernel : "none");
}

static PyGetSetDef Scanner_getset[] = {
    {"kernel", (getter)Scanner_kernel, NULL, "the search kernel in use", NULL},
    {NULL}};

static PyMethodDef Scanner_methods[] = {
    {"next", (PyCFunction)Scanner_next, METH_VARARGS,
     "next(buf, pos, end, line_no, state) -> (cand, fed, lines_fed, lines_to_cand, hot)"},
    {"candidates", (PyCFunction)Scanner_candidates, METH_VARARGS,
     "candidates(buf, start=0, end=-1) -> starts of the lines that pass the gate"},
    {"count", (PyCFunction)Scanner_count, METH_VARARGS, "count(buf, start=0, end=-1) -> newlines"},
    {"skip_unstamped", (PyCFunction)Scanner_skip_unstamped, METH_VARARGS,
     "skip_unstamped(buf, lo, hi) -> (hi, skipped)"},
    {NULL}};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sparktriage.evidence._fastscan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Scanner(starts, literals, pairs): the analysis gate on raw bytes",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
    .tp_getset = Scanner_getset,
};

/* ------------------------------------------------------------------ HotState */

static void clear_batch(HotState *st) {
    st->loaded = st->dirty = 0;
    st->events = st->n_warning = 0;
    memset(st->n_level, 0, sizeof st->n_level);
    st->nlevels = 0;
    for (int i = 0; i < KNOWN_SLOTS; i++) st->known[i].delta = 0;
    st->t_min = st->t_max = NAN;
    st->last_start = st->last_end = -1;
    Py_CLEAR(st->last_copy);
    st->last_line_no = 0;
    st->last_t = NAN;
    for (int i = 0; i < st->nengines; i++) Py_CLEAR(st->engine[i].str);
    st->nengines = 0;
    st->ndiff = 0;
}

static PyObject *HotState_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    HotState *st = (HotState *)type->tp_alloc(type, 0);
    if (!st) return NULL;
    st->clock_last = NAN;
    st->gen.peak = st->prompt.peak = st->peak_tps = NAN;
    for (int i = 0; i < HOUR_CACHE; i++) st->hour_key[i] = -1;
    clear_batch(st);
    return (PyObject *)st;
}

static int HotState_traverse(HotState *st, visitproc visit, void *arg) {
    Py_VISIT(st->node);
    Py_VISIT(st->hour_base);
    Py_VISIT(st->diffs);
    Py_VISIT(st->stats_windows);
    Py_VISIT(st->stats_cls);
    Py_VISIT(st->spec_windows);
    Py_VISIT(st->spec_cls);
    for (int i = 0; i < st->nengines; i++) Py_VISIT(st->engine[i].str);
    for (int i = 0; i < KNOWN_SLOTS; i++) Py_VISIT(st->known[i].entry);
    return 0;
}

static int HotState_clear(HotState *st) {
    Py_CLEAR(st->node);
    Py_CLEAR(st->hour_base);
    Py_CLEAR(st->diffs);
    Py_CLEAR(st->stats_windows);
    Py_CLEAR(st->stats_cls);
    Py_CLEAR(st->spec_windows);
    Py_CLEAR(st->spec_cls);
    Py_CLEAR(st->last_copy);
    for (int i = 0; i < st->nengines; i++) Py_CLEAR(st->engine[i].str);
    st->nengines = 0;
    for (int i = 0; i < KNOWN_SLOTS; i++) {
        Py_CLEAR(st->known[i].entry);
        PyMem_Free(st->known[i].msg);
        st->known[i].msg = NULL;
    }
    st->nknown = 0;
    return 0;
}

static void HotState_dealloc(HotState *st) {
    PyObject_GC_UnTrack(st);
    HotState_clear(st);
    Py_TYPE(st)->tp_free((PyObject *)st);
}

static PyObject *HotState_reset(HotState *st, PyObject *unused) {
    clear_batch(st);
    Py_RETURN_NONE;
}

/* set_engines([(name, last_t or None), ...]): the node's engines and their last stats line */
static PyObject *HotState_set_engines(HotState *st, PyObject *pairs) {
    PyObject *seq = PySequence_Fast(pairs, "a sequence of (name, t)");
    if (!seq) return NULL;
    for (int i = 0; i < st->nengines; i++) Py_CLEAR(st->engine[i].str);
    st->nengines = 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name, *t;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "UO", &name, &t)) goto fail;
        Py_ssize_t len;
        const char *s = PyUnicode_AsUTF8AndSize(name, &len);
        if (!s) goto fail;
        if (len >= 32) continue; /* longer than any name a hot line can give */
        if (st->nengines >= MAX_ENGINES) {
            PyErr_SetString(PyExc_OverflowError, "too many engines");
            goto fail;
        }
        Engine *e = add_engine(st, s, (int)len);
        if (!e) goto fail;
        if (t != Py_None) {
            e->last = PyFloat_AsDouble(t);
            if (e->last == -1.0 && PyErr_Occurred()) goto fail;
        }
    }
    Py_DECREF(seq);
    Py_RETURN_NONE;
fail:
    Py_DECREF(seq);
    return NULL;
}

/* engines() -> [(name, last_t)] of the engines hot lines touched */
static PyObject *HotState_engines(HotState *st, PyObject *unused) {
    PyObject *out = PyList_New(0);
    for (int i = 0; out && i < st->nengines; i++) {
        if (!st->engine[i].touched) continue;
        PyObject *item = Py_BuildValue("(Od)", st->engine[i].str, st->engine[i].last);
        if (!item || PyList_Append(out, item) < 0) Py_CLEAR(out);
        Py_XDECREF(item);
    }
    return out;
}

/* diff_counts() -> [(spacing, count)] counted since the load */
static PyObject *HotState_diff_counts(HotState *st, PyObject *unused) {
    PyObject *out = PyList_New(st->ndiff);
    for (int i = 0; out && i < st->ndiff; i++) {
        PyObject *item = Py_BuildValue("(dL)", st->diff[i].key, st->diff[i].count);
        if (!item) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, item);
    }
    return out;
}

/* keep_last(buf): copy the last folded line out of buf (which is about to be reused) */
static PyObject *HotState_keep_last(HotState *st, PyObject *obj) {
    if (st->last_start < 0) Py_RETURN_NONE;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (st->last_end > view.len || st->last_start > st->last_end) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "the last line is not in this buffer");
        return NULL;
    }
    PyObject *copy = PyBytes_FromStringAndSize((const char *)view.buf + st->last_start,
                                               st->last_end - st->last_start);
    PyBuffer_Release(&view);
    if (!copy) return NULL;
    Py_XSETREF(st->last_copy, copy);
    st->last_start = st->last_end = -1;
    Py_RETURN_NONE;
}

/* last_line(buf) -> bytes of the last folded line (from buf, or the copy keep_last made) */
static PyObject *HotState_last_line(HotState *st, PyObject *obj) {
    if (st->last_start < 0) return Py_NewRef(st->last_copy ? st->last_copy : S_empty_bytes);
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *out = NULL;
    if (st->last_end <= view.len && st->last_start <= st->last_end)
        out = PyBytes_FromStringAndSize((const char *)view.buf + st->last_start,
                                        st->last_end - st->last_start);
    else
        PyErr_SetString(PyExc_ValueError, "the last line is not in this buffer");
    PyBuffer_Release(&view);
    return out;
}

/* register_warning(message, entry): later WARNING lines with exactly this message only raise
   entry["count"] (Python checked: no catalog rule, no fatal signature, no restart mark). */
static PyObject *HotState_register_warning(HotState *st, PyObject *args) {
    PyObject *message, *entry;
    if (!PyArg_ParseTuple(args, "UO!", &message, &PyDict_Type, &entry)) return NULL;
    Py_ssize_t len;
    const char *text = PyUnicode_AsUTF8AndSize(message, &len);
    if (!text) return NULL;
    if (len > HOT_MAX_LINE || st->nknown >= KNOWN_SLOTS / 2) Py_RETURN_FALSE;
    uint64_t hash = hash_bytes((const uint8_t *)text, len);
    int i = known_slot(st, (const uint8_t *)text, len, hash);
    if (st->known[i].msg) Py_RETURN_TRUE;
    uint8_t *copy = PyMem_Malloc(len ? len : 1);
    if (!copy) return PyErr_NoMemory();
    memcpy(copy, text, len);
    st->known[i].msg = copy;
    st->known[i].len = len;
    st->known[i].hash = hash;
    st->known[i].entry = Py_NewRef(entry);
    st->known[i].delta = 0;
    st->nknown++;
    Py_RETURN_TRUE;
}

/* warning_counts() -> [(entry, n)]: the counts to add since the load */
static PyObject *HotState_warning_counts(HotState *st, PyObject *unused) {
    (void)unused;
    PyObject *out = PyList_New(0);
    for (int i = 0; out && i < KNOWN_SLOTS; i++) {
        if (!st->known[i].delta) continue;
        PyObject *item = Py_BuildValue("(OL)", st->known[i].entry, st->known[i].delta);
        if (!item || PyList_Append(out, item) < 0) Py_CLEAR(out);
        Py_XDECREF(item);
    }
    return out;
}

/* levels() -> [(level, n)] in the order the levels were first counted */
static PyObject *HotState_levels(HotState *st, PyObject *unused) {
    (void)unused;
    static const char *names[] = {"", "INFO", "DEBUG", "WARNING"};
    PyObject *out = PyList_New(st->nlevels);
    for (int i = 0; out && i < st->nlevels; i++) {
        int level = st->level_order[i];
        PyObject *item = Py_BuildValue("(sL)", names[level], st->n_level[level]);
        if (!item) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, item);
    }
    return out;
}

static PyObject *HotState_per_pos(HotState *st, PyObject *unused) {
    PyObject *out = PyList_New(st->npos);
    for (int i = 0; out && i < st->npos; i++) {
        PyObject *f = PyFloat_FromDouble(st->per_pos[i]);
        if (!f) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, f);
    }
    return out;
}

static PyObject *HotState_set_per_pos(HotState *st, PyObject *values) {
    PyObject *seq = PySequence_Fast(values, "a sequence of floats");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > MAX_POS) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_OverflowError, "too many positions");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1.0 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
        st->per_pos[i] = v;
    }
    st->npos = (int)n;
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

static PyMethodDef HotState_methods[] = {
    {"reset", (PyCFunction)HotState_reset, METH_NOARGS, "forget the batch; not lent"},
    {"set_engines", (PyCFunction)HotState_set_engines, METH_O, "set_engines([(name, t|None)])"},
    {"engines", (PyCFunction)HotState_engines, METH_NOARGS, "[(name, last_t)] touched"},
    {"diff_counts", (PyCFunction)HotState_diff_counts, METH_NOARGS, "[(spacing, count)]"},
    {"per_pos", (PyCFunction)HotState_per_pos, METH_NOARGS, "accepted per position (weighted)"},
    {"set_per_pos", (PyCFunction)HotState_set_per_pos, METH_O, "set_per_pos([float])"},
    {"keep_last", (PyCFunction)HotState_keep_last, METH_O, "copy the last folded line out of buf"},
    {"last_line", (PyCFunction)HotState_last_line, METH_O, "bytes of the last folded line"},
    {"register_warning", (PyCFunction)HotState_register_warning, METH_VARARGS,
     "register_warning(message, entry) -> bool"},
    {"warning_counts", (PyCFunction)HotState_warning_counts, METH_NOARGS, "[(entry, n)]"},
    {"levels", (PyCFunction)HotState_levels, METH_NOARGS, "[(level, n)] in first-seen order"},
    {NULL}};

#define M(name, type, field, flags) {name, type, offsetof(HotState, field), flags, NULL}
static PyMemberDef HotState_members[] = {
    M("loaded", T_INT, loaded, 0),
    M("dirty", T_INT, dirty, READONLY),
    M("crlf", T_INT, crlf, 0),
    M("node", T_OBJECT, node, 0),
    M("hour_base", T_OBJECT, hour_base, 0),
    M("year", T_LONGLONG, year, 0),
    M("clock_last", T_DOUBLE, clock_last, 0),
    M("events", T_LONGLONG, events, READONLY),
    M("n_warning", T_LONGLONG, n_warning, READONLY),
    M("known", T_INT, nknown, READONLY),
    M("t_min", T_DOUBLE, t_min, READONLY),
    M("t_max", T_DOUBLE, t_max, READONLY),
    M("last_start", T_PYSSIZET, last_start, READONLY),
    M("last_end", T_PYSSIZET, last_end, READONLY),
    M("last_line_no", T_LONGLONG, last_line_no, READONLY),
    M("last_t", T_DOUBLE, last_t, READONLY),
    M("gen_n", T_LONGLONG, gen.n, 0),
    M("gen_active", T_LONGLONG, gen.active, 0),
    M("gen_total", T_DOUBLE, gen.total, 0),
    M("gen_total_active", T_DOUBLE, gen.total_active, 0),
    M("gen_peak", T_DOUBLE, gen.peak, 0),
    M("prompt_n", T_LONGLONG, prompt.n, 0),
    M("prompt_active", T_LONGLONG, prompt.active, 0),
    M("prompt_total", T_DOUBLE, prompt.total, 0),
    M("prompt_total_active", T_DOUBLE, prompt.total_active, 0),
    M("prompt_peak", T_DOUBLE, prompt.peak, 0),
    M("diffs", T_OBJECT, diffs, 0),
    M("diffs_len", T_PYSSIZET, diffs_len, 0),
    M("stats_windows", T_OBJECT, stats_windows, 0),
    M("stats_cls", T_OBJECT, stats_cls, 0),
    M("stats_keep", T_PYSSIZET, stats_keep, 0),
    M("spec_n", T_LONGLONG, spec_n, 0),
    M("accepted", T_LONGLONG, accepted, 0),
    M("drafted", T_LONGLONG, drafted, 0),
    M("drafts", T_DOUBLE, drafts, 0),
    M("peak_tps", T_DOUBLE, peak_tps, 0),
    M("spec_windows", T_OBJECT, spec_windows, 0),
    M("spec_cls", T_OBJECT, spec_cls, 0),
    M("spec_keep", T_PYSSIZET, spec_keep, 0),
    {NULL}};
#undef M

static PyTypeObject HotStateType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sparktriage.evidence._fastscan.HotState",
    .tp_basicsize = sizeof(HotState),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "What hot lines change in the analysis, lent by evidence/hotlink.py",
    .tp_new = HotState_new,
    .tp_traverse = (traverseproc)HotState_traverse,
    .tp_clear = (inquiry)HotState_clear,
    .tp_dealloc = (destructor)HotState_dealloc,
    .tp_methods = HotState_methods,
    .tp_members = HotState_members,
};

/* parse_hot(line) -> None or a tuple of what was read (tests compare it with the Python path) */
static PyObject *mod_parse_hot(PyObject *mod, PyObject *args) {
    Py_buffer view;
    int crlf = 0;
    if (!PyArg_ParseTuple(args, "y*|p", &view, &crlf)) return NULL;
    Hot h;
    int ok = parse_hot(view.buf, (const uint8_t *)view.buf + view.len, crlf, &h);
    PyBuffer_Release(&view);
    if (!ok) Py_RETURN_NONE;
    const char *level = h.level == 1 ? "INFO" : h.level == 2 ? "DEBUG" : "WARNING";
    if (h.kind == 3)
        return Py_BuildValue("(ss(iiiii)s#)", "warning", level, h.mo, h.day, h.hour, h.min, h.sec,
                             (const char *)h.msg, h.msg_len);
    if (h.kind == 1)
        return Py_BuildValue("(ss(iiiii)s#ddLLdN)", "stats", level, h.mo, h.day, h.hour, h.min,
                             h.sec, h.engine, (Py_ssize_t)h.engine_len, h.prompt, h.gen, h.running,
                             h.waiting, h.kv, h.has_prefix ? PyFloat_FromDouble(h.prefix) : Py_NewRef(Py_None));
    PyObject *pos = PyList_New(h.npos);
    if (!pos) return NULL;
    for (int i = 0; i < h.npos; i++) PyList_SET_ITEM(pos, i, PyFloat_FromDouble(h.pos[i]));
    return Py_BuildValue("(ss(iiiii)dddLLNN)", "spec", level, h.mo, h.day, h.hour, h.min, h.sec,
                         h.mal, h.acc_tps, h.dra_tps, h.acc, h.dra, pos,
                         h.pct_nan ? Py_NewRef(Py_None) : PyFloat_FromDouble(h.pct));
}

/* ------------------------------------------------------------------ document rows */

#if PY_VERSION_HEX < 0x030D0000
#define new_row(n) _PyDict_NewPresized(n) /* no resizing while the row fills */
#else
#define new_row(n) PyDict_New()
#endif

/* seen[t], or fmt(t) remembered there (LogAnalyzer's memo of time strings) */
static PyObject *time_text(PyObject *seen, PyObject *fmt, PyObject *t) {
    PyObject *s = PyDict_GetItemWithError(seen, t);
    if (s && s != Py_None) return Py_NewRef(s);
    if (PyErr_Occurred()) return NULL;
    s = PyObject_CallOneArg(fmt, t);
    if (s && PyDict_SetItem(seen, t, s) < 0) Py_CLEAR(s);
    return s;
}

/* w.<name>: from the instance dict (dataclass fields live there), else the usual lookup */
static PyObject *field(PyObject *d, PyObject *w, PyObject *name) {
    PyObject *v = d ? PyDict_GetItemWithError(d, name) : NULL;
    if (v) return Py_NewRef(v);
    if (PyErr_Occurred()) return NULL;
    return PyObject_GetAttr(w, name);
}

static int put(PyObject *row, PyObject *key, PyObject *value) {
    if (!value) return -1;
    int r = PyDict_SetItem(row, key, value);
    Py_DECREF(value);
    return r;
}

/* stats_rows(windows, seen, fmt) -> the rows of LogAnalyzer._windows, built here */
static PyObject *mod_stats_rows(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *windows, *seen, *fmt;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyList_Type, &windows, &PyDict_Type, &seen, &fmt)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(windows);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *w = PyList_GET_ITEM(windows, i), *row = new_row(14), *parts = NULL;
        PyObject *d = PyObject_GenericGetDict(w, NULL);
        if (!d) PyErr_Clear();
        PyObject *t = row ? field(d, w, S_t) : NULL;
        PyObject *start = t ? field(d, w, S_start) : NULL;
        int bad = !start || put(row, S_end, time_text(seen, fmt, t)) < 0 ||
                  put(row, S_start, time_text(seen, fmt, start)) < 0 ||
                  put(row, S_start_estimated, field(d, w, S_start_estimated)) < 0 ||
                  put(row, S_engine, field(d, w, S_engine)) < 0 ||
                  put(row, S_node, field(d, w, S_node)) < 0 ||
                  put(row, S_prompt, field(d, w, S_prompt)) < 0 ||
                  put(row, S_generation, field(d, w, S_generation)) < 0 ||
                  put(row, S_level, field(d, w, S_level)) < 0 ||
                  !(parts = field(d, w, S_parts)) || PyDict_Update(row, parts) < 0;
        Py_XDECREF(d);
        Py_XDECREF(t);
        Py_XDECREF(start);
        Py_XDECREF(parts);
        if (bad) {
            Py_XDECREF(row);
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, row);
    }
    return out;
}

/* spec_rows(windows, seen, fmt) -> the rows of LogAnalyzer._spec_windows, built here */
static PyObject *mod_spec_rows(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *windows, *seen, *fmt;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyList_Type, &windows, &PyDict_Type, &seen, &fmt)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(windows);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *w = PyList_GET_ITEM(windows, i), *row = new_row(12), *values = NULL, *drafts = NULL;
        PyObject *d = PyObject_GenericGetDict(w, NULL);
        if (!d) PyErr_Clear();
        PyObject *t = row ? field(d, w, S_t) : NULL;
        int bad = !t || put(row, S_end, time_text(seen, fmt, t)) < 0 ||
                  put(row, S_node, field(d, w, S_node)) < 0 ||
                  !(values = field(d, w, S_values)) || PyDict_Update(row, values) < 0 ||
                  put(row, S_per_position, field(d, w, S_per_position)) < 0 ||
                  !(drafts = field(d, w, S_drafts)) ||
                  put(row, S_drafts_estimated, drafts == Py_None ? Py_NewRef(Py_None)
                                                                 : PyObject_CallMethodOneArg(drafts, S_round, S_two)) < 0;
        Py_XDECREF(d);
        Py_XDECREF(t);
        Py_XDECREF(values);
        Py_XDECREF(drafts);
        if (bad) {
            Py_XDECREF(row);
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, row);
    }
    return out;
}

static PyMethodDef module_methods[] = {
    {"stats_rows", (PyCFunction)mod_stats_rows, METH_VARARGS, "stats_rows(windows, seen, fmt)"},
    {"spec_rows", (PyCFunction)mod_spec_rows, METH_VARARGS, "spec_rows(windows, seen, fmt)"},
    {"parse_hot", (PyCFunction)mod_parse_hot, METH_VARARGS, "parse_hot(line, crlf=False)"},
    {NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastscan",
                                    "The compiled scanner of `sparktriage logs`.", -1, module_methods};

PyMODINIT_FUNC PyInit__fastscan(void) {
    struct { PyObject **slot; const char *text; } names[] = {
        {&S_running, "running"}, {&S_waiting, "waiting"}, {&S_kv, "kv_usage_pct"},
        {&S_prefix, "prefix_hit_pct"}, {&S_parts, "parts"}, {&S_mal, "mean_acceptance_length"},
        {&S_acc_tps, "accepted_tps"}, {&S_dra_tps, "drafted_tps"}, {&S_accepted, "accepted"},
        {&S_drafted, "drafted"}, {&S_pct, "acceptance_pct"}, {&S_level_info, "INFO"},
        {&S_level_debug, "DEBUG"}, {&S_t, "t"}, {&S_engine, "engine"}, {&S_prompt, "prompt"},
        {&S_generation, "generation"}, {&S_level, "level"}, {&S_node, "node"}, {&S_start, "start"},
        {&S_start_estimated, "start_estimated"}, {&S_values, "values"},
        {&S_per_position, "per_position"}, {&S_drafts, "drafts"}, {&S_drafts_exact, "drafts_exact"},
        {&S_end, "end"}, {&S_drafts_estimated, "drafts_estimated"}, {&S_round, "__round__"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!*names[i].slot && !(*names[i].slot = PyUnicode_InternFromString(names[i].text)))
            return NULL;
    init_classes();
    if (!S_two && !(S_two = PyLong_FromLong(2))) return NULL;
    if (!S_empty && !(S_empty = PyTuple_New(0))) return NULL;
    if (!S_empty_bytes && !(S_empty_bytes = PyBytes_FromStringAndSize("", 0))) return NULL;
    if (PyType_Ready(&ScannerType) < 0 || PyType_Ready(&HotStateType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    Py_INCREF(&HotStateType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0 ||
        PyModule_AddObject(m, "HotState", (PyObject *)&HotStateType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
