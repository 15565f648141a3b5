/* state.c: the HotState type, what hot lines change while the analysis lends it to C.

   hotlink.py sets the members from the Python objects when it lends the state (load) and reads
   them back when it takes it back (store); the methods move the few tables (engines, spacings,
   accepted per position, known warnings, levels) and the last folded line across. */

#include "fastscan.h"

void fs_clear_batch(HotState *st) {
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
    fs_clear_batch(st);
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
    fs_clear_batch(st);
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
        Engine *e = fs_add_engine(st, s, (int)len);
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
    uint64_t hash = fs_hash_bytes((const uint8_t *)text, len);
    int i = fs_known_slot(st, (const uint8_t *)text, len, hash);
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

PyTypeObject fs_HotStateType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sparktriage.logs._fastscan.HotState",
    .tp_basicsize = sizeof(HotState),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "What hot lines change in the analysis, lent by logs/hotlink.py",
    .tp_new = HotState_new,
    .tp_traverse = (traverseproc)HotState_traverse,
    .tp_clear = (inquiry)HotState_clear,
    .tp_dealloc = (destructor)HotState_dealloc,
    .tp_methods = HotState_methods,
    .tp_members = HotState_members,
};
