/* fold.c: folding hot lines into a lent HotState, and Scanner.next, which finds them.

   Folding repeats the Python path's operations one by one, in the same order (StampClock's
   year and rollover rules, _Rates, StatsSeries' spacings and kept windows, SpecSeries' totals
   and drafts, Facts' warning count, LogAnalyzer's counters); a line whose effect would leave
   that simple case (a stamp that is not a real time, a spacing that is not a whole second, a
   full table, an integer overflow) is handed to Python untouched. */

#include "fastscan.h"

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


/* 1 and *t set, 0 when the stamp is not a real time, -1 on a Python error */
static int unix_time(HotState *st, long long year, const Hot *h, double *t) {
    double base;
    if (hour_base(st, year, h->mo, h->day, h->hour, &base) < 0) return -1;
    if (isnan(base) || h->min > 59 || h->sec > 60) return 0;
    *t = (base + (double)(60 * h->min)) + (double)(h->sec < 59 ? h->sec : 59);
    return 1;
}

#define HALF_YEAR (183 * 86400.0)
#define SLACK 86400.0

/* StampClock.from_stamp with a known year: (t, new year, new last); 0 = hand it to Python */
static int stamp_time(HotState *st, const Hot *h, double *t, long long *year, double *last) {
    if (h->mo == 2 && h->day == 29) return 0;  /* which year holds it: Python's rules */
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
        double back;
        r = unix_time(st, st->year - 1, h, &back);
        if (r < 0) return r;
        if (r == 1 && back >= st->clock_last - SLACK)
            *t = back;  /* a straggler from just before the rollover */
        else
            *last = *t;  /* months later in the same year: the year never goes back */
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

Engine *fs_add_engine(HotState *st, const char *name, int len) {
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

uint64_t fs_hash_bytes(const uint8_t *p, Py_ssize_t n) { /* FNV-1a */
    uint64_t h = 1469598103934665603ull;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* The slot of a known message, or of the empty slot where it would go. */
int fs_known_slot(const HotState *st, const uint8_t *msg, Py_ssize_t len, uint64_t hash) {
    int i = (int)(hash % KNOWN_SLOTS);
    while (st->known[i].msg &&
           !(st->known[i].hash == hash && st->known[i].len == len && memcmp(st->known[i].msg, msg, len) == 0))
        i = (i + 1) % KNOWN_SLOTS;
    return i;
}

static int find_known(const HotState *st, const Hot *h) {
    if (!st->nknown) return -1;
    int i = fs_known_slot(st, h->msg, h->msg_len, fs_hash_bytes(h->msg, h->msg_len));
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
            if (!(eng = fs_add_engine(st, h->engine, h->engine_len))) return PyErr_Occurred() ? -1 : 0;
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


/* next(buf, pos, end, line_no, state) -> (cand, fed, lines_fed, lines_to_cand, hot)

   From pos (a line start; line number line_no), fold the hot lines into `state` while it is
   lent (state.loaded), and stop at the first other line that passes the gate. cand is its start
   (-1: none before end); fed is where the folded lines end (pos when none); lines_fed counts the
   lines in [pos, fed), lines_to_cand those in [fed, cand) (or [fed, end)); hot is 1 when cand is
   a hot line left alone because the state is not lent. A line right after one that ends in the
   continuation mark ("\r\n"; "\r\r\n" in a Windows file) is never folded: Python joins it. */
PyObject *fs_scanner_next(Scanner *self, PyObject *args) {
    PyObject *obj, *state;
    Py_ssize_t pos, end;
    long long line_no;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "OnnLO", &obj, &pos, &end, &line_no, &state)) return NULL;
    if (state != Py_None && !PyObject_TypeCheck(state, &fs_HotStateType)) {
        PyErr_SetString(PyExc_TypeError, "state must be a HotState or None");
        return NULL;
    }
    if (end < 0) end = PY_SSIZE_T_MAX;
    if (fs_get_buffer(obj, &view, &pos, &end) < 0) return NULL;
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
            start = fs_find_candidate(self, buf, cur, end, &nl);
            acc += nl;
            if (start < 0) break;
            nlp = memchr(buf + start, '\n', end - start);
            le = nlp ? nlp - buf : end;
        }
        cand = start;
        if (!chained &&
            (!st || (start - width >= fed && memcmp(buf + start - width, mark, width) == 0) ||
             !fs_parse_hot(buf + start, buf + le, st->crlf, &h)))
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
            chained = fs_parse_hot(buf + cur, buf + le, st->crlf, &h) &&
                      (h.kind == 3 ? self->warn_gated : h.spaced);
        }
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("nnnni", cand, fed, lines_fed, acc, hot);
}
