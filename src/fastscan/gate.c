/* gate.c: the Scanner type, the analysis gate of logs/gate.py on raw bytes (search.c finds,
   this file configures and exposes): candidates, newline counts, the skip over unstamped lines
   that the time anchor needs, and the choice of search kernel. Scanner.next is in fold.c. */

#include "fastscan.h"

int fs_get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t *pos, Py_ssize_t *end) {
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
        if (!fs_bracket_match(self, t, t + strlen(hot_starts[i]))) self->hot_gated = 0;
    }
    self->warn_gated = 0;
    for (int i = 0; i < self->nlit; i++) {
        const char *w = "WARNING ";
        for (int at = 0; at + self->litlen[i] <= 8; at++)
            if (memcmp(w + at, self->lit[i], self->litlen[i]) == 0) self->warn_gated = 1;
    }
    /* kernel: "auto" (the fastest this CPU has), "avx2", "vector" (16-byte, portable), "scalar" */
    self->vscan = fs_vscan_none;
    self->kernel = "scalar";
#ifdef HAVE_VEC
    if (strcmp(kernel, "scalar") != 0) {
        self->vscan = fs_vscan16;
        self->kernel = "vector";
    }
#endif
#ifdef HAVE_AVX2
    if ((strcmp(kernel, "auto") == 0 || strcmp(kernel, "avx2") == 0) && __builtin_cpu_supports("avx2")) {
        self->vscan = fs_vscan_avx2;
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
    if (fs_get_buffer(obj, &view, &pos, &end) < 0) return NULL;
    const uint8_t *buf = view.buf;
    PyObject *out = PyList_New(0);
    if (!out) goto done;
    if (pos > 0 && buf[pos - 1] != '\n') { /* a line that began before pos is not ours */
        const uint8_t *nlp = memchr(buf + pos, '\n', end - pos);
        pos = nlp ? nlp - buf + 1 : end;
    }
    while (pos < end) {
        Py_ssize_t nl, start = fs_find_candidate(self, buf, pos, end, &nl);
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
    if (fs_get_buffer(obj, &view, &pos, &end) < 0) return NULL;
    Py_ssize_t n = fs_count_nl((const uint8_t *)view.buf + pos, (const uint8_t *)view.buf + end);
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
    if (fs_get_buffer(obj, &view, &lo, &end) < 0) return NULL;
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

static PyObject *Scanner_kernel(Scanner *self, void *unused) {
    (void)unused;
    return PyUnicode_FromString(self->kernel ? self->kernel : "none");
}

static PyGetSetDef Scanner_getset[] = {
    {"kernel", (getter)Scanner_kernel, NULL, "the search kernel in use", NULL},
    {NULL}};

static PyMethodDef Scanner_methods[] = {
    {"next", (PyCFunction)fs_scanner_next, METH_VARARGS,
     "next(buf, pos, end, line_no, state) -> (cand, fed, lines_fed, lines_to_cand, hot)"},
    {"candidates", (PyCFunction)Scanner_candidates, METH_VARARGS,
     "candidates(buf, start=0, end=-1) -> starts of the lines that pass the gate"},
    {"count", (PyCFunction)Scanner_count, METH_VARARGS, "count(buf, start=0, end=-1) -> newlines"},
    {"skip_unstamped", (PyCFunction)Scanner_skip_unstamped, METH_VARARGS,
     "skip_unstamped(buf, lo, hi) -> (hi, skipped)"},
    {NULL}};

PyTypeObject fs_ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sparktriage.logs._fastscan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Scanner(starts, literals, pairs): the analysis gate on raw bytes",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
    .tp_getset = Scanner_getset,
};
