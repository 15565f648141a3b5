/* fastscan.h: the compiled fast path of `sparktriage logs` (module sparktriage.logs._fastscan;
   docs/logs.md, "The compiled scanner"). One job per unit:

   search.c  finding the lines that pass the analysis gate (vector prefilter, exact checks)
   gate.c    the Scanner type that configures and exposes the search
   hotline.c reading the hot line shapes in full
   fold.c    folding hot lines into a lent HotState; Scanner.next, which finds and folds
   state.c   the HotState type: what hot lines change, and its exchange with hotlink.py
   module.c  the document's window rows, the module and its interned names


   Scanner  finds the lines of a block of raw log bytes that pass the analysis gate of
            logs/gate.py, in one pass: a vector prefilter (16 bytes, 32 with AVX2) on a pair
            of adjacent bytes of every needle (the "]" of vLLM's "[file.py:N] ", the JSON formatter's "message" key, the
            gate literals), newline counting on the way, an exact check at each hit.
   HotState holds, while the Python analysis lends it, the state that the two hot line shapes
            touch (the periodic stats line and the SpecDecoding line, 0.11-0.33, in their
            common form): Scanner.next() parses such lines in full and folds them in directly,
            so Python sees only the rare lines. logs/hotlink.py lends and takes back.

   Contract: every read stays inside [pos, end) of the caller's buffer (bounds are checked
   before every access), nothing here raises on content, and a hot line is folded in only when
   the Python path would do exactly the same with it (anything unusual is handed to Python).
   Floating point follows Python's: one IEEE double operation per Python operation, no
   contraction (built with -ffp-contract=off), decimals converted exactly. */

#ifndef SPARKTRIAGE_FASTSCAN_H
#define SPARKTRIAGE_FASTSCAN_H


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

static inline int tag_char(uint8_t c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
}

/* search.c */
Py_ssize_t fs_find_candidate(const Scanner *s, const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end,
                             Py_ssize_t *nl);
int fs_bracket_match(const Scanner *s, const uint8_t *p, const uint8_t *end);
Py_ssize_t fs_count_nl(const uint8_t *p, const uint8_t *end);
const uint8_t *fs_vscan_none(const Scanner *s, const uint8_t *base, const uint8_t *p,
                             const uint8_t *stop, const uint8_t **hit, Py_ssize_t *lines);
#if defined(__GNUC__)
#define HAVE_VEC 1
const uint8_t *fs_vscan16(const Scanner *s, const uint8_t *base, const uint8_t *p,
                          const uint8_t *stop, const uint8_t **hit, Py_ssize_t *lines);
#endif
#if defined(__GNUC__) && defined(__x86_64__)
#define HAVE_AVX2 1
const uint8_t *fs_vscan_avx2(const Scanner *s, const uint8_t *base, const uint8_t *p,
                             const uint8_t *stop, const uint8_t **hit, Py_ssize_t *lines);
#endif

/* gate.c */
extern PyTypeObject fs_ScannerType;
int fs_get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t *pos, Py_ssize_t *end);

/* hotline.c */
void fs_init_classes(void);
int fs_parse_hot(const uint8_t *p, const uint8_t *e, int crlf, Hot *h);

/* fold.c */
PyObject *fs_scanner_next(Scanner *self, PyObject *args);
Engine *fs_add_engine(HotState *st, const char *name, int len);
uint64_t fs_hash_bytes(const uint8_t *p, Py_ssize_t n);
int fs_known_slot(const HotState *st, const uint8_t *msg, Py_ssize_t len, uint64_t hash);

/* state.c */
extern PyTypeObject fs_HotStateType;
void fs_clear_batch(HotState *st);

/* module.c: interned strings */
extern PyObject *S_running, *S_waiting, *S_kv, *S_prefix, *S_parts, *S_mal, *S_acc_tps,
    *S_dra_tps, *S_accepted, *S_drafted, *S_pct, *S_level_info, *S_level_debug, *S_t, *S_engine,
    *S_prompt, *S_generation, *S_level, *S_node, *S_start, *S_start_estimated, *S_values,
    *S_per_position, *S_drafts, *S_drafts_exact, *S_empty, *S_empty_bytes, *S_end,
    *S_drafts_estimated, *S_round, *S_two;

#endif
