/* search.c: finding the lines that pass the analysis gate in a range of raw bytes.

   The gate's message starts come from Python as small programs (compiled.py: literal bytes,
   any byte, digits, upper-case letters, an optional literal), matched after vLLM's "] " (or the
   JSON formatter's "message" key); the gate literals match anywhere. A vector prefilter tests one
   pair of adjacent bytes per needle on 16 or 32 bytes at a time (AVX2 nibble classes where the
   CPU has them, portable vectors otherwise, plain bytes as a last resort), counting newlines on
   the way; each hit is then checked exactly. */

#include "fastscan.h"

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
int fs_bracket_match(const Scanner *s, const uint8_t *p, const uint8_t *end) {
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
    if (*p == ']' && fs_bracket_match(s, p, end)) return 1;
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

Py_ssize_t fs_count_nl(const uint8_t *p, const uint8_t *end) {
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
    if ((*q == ']' && fs_bracket_match(s, q, end)) || (*q == '"' && json_match(s, q, end))) best = q;
    for (int i = 0; i < s->nlit; i++) {
        if (q - base < s->pair[i + 2].o) continue; /* it would start before the range */
        const uint8_t *st = q - s->pair[i + 2].o;
        if ((!best || st < best) && end - st >= s->litlen[i] &&
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
    ATTR const uint8_t *NAME(const Scanner *s, const uint8_t *base, const uint8_t *p,   \
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

#ifdef HAVE_VEC
typedef uint8_t v16 __attribute__((vector_size(16)));
DEFINE_VSCAN(fs_vscan16, v16, 16, )
#endif

#ifdef HAVE_AVX2
#include <immintrin.h>

/* AVX2: each needle is one bit; a byte's class bits are looked up by its two nibbles
   (vpshufb), for the first byte of the pair at p and the second at p + 1. */
__attribute__((target("avx2"))) const uint8_t *
fs_vscan_avx2(const Scanner *s, const uint8_t *base, const uint8_t *p, const uint8_t *stop,
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

const uint8_t *fs_vscan_none(const Scanner *s, const uint8_t *base, const uint8_t *p,
                                 const uint8_t *stop, const uint8_t **hit, Py_ssize_t *lines) {
    (void)s, (void)base, (void)stop, (void)lines;
    *hit = NULL;
    return p;
}

/* The first line in [pos, end) that passes the gate: its start, or -1. pos is a line start.
   *nl receives the newlines in [pos, start) (or in [pos, end) when there is none). */
Py_ssize_t fs_find_candidate(const Scanner *s, const uint8_t *buf, Py_ssize_t pos,
                                 Py_ssize_t end, Py_ssize_t *nl) {
    const uint8_t *base = buf + pos, *stop = buf + end, *p = base, *hit = NULL;
    Py_ssize_t lines = 0; /* newlines in [base, p) */
    p = s->vscan(s, base, p, stop, &hit, &lines);
    if (hit) { /* a needle that starts a little earlier may have its pair in the next chunk */
        for (const uint8_t *q = hit - base > s->maxoff ? hit - s->maxoff : base; q < hit; q++)
            if (needle_at(s, q, stop)) {
                hit = q;
                break;
            }
    } else { /* the bytes the vector part left, and needles whose pair lies among them */
        const uint8_t *q = p - base > s->maxoff ? p - s->maxoff : base;
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
    lines += ls >= p ? fs_count_nl(p, ls) : -fs_count_nl(ls, p);
    *nl = lines;
    return ls - buf;
}
