/* module.c: the module sparktriage.logs._fastscan, its interned names, and the document's
   window rows (LogAnalyzer._windows and _spec_windows, built here: the same dicts, same keys in
   the same order). parse_hot is exposed for the tests that compare it with the Python parser. */

#include "fastscan.h"

PyObject *S_running, *S_waiting, *S_kv, *S_prefix, *S_parts, *S_mal, *S_acc_tps, *S_dra_tps,
    *S_accepted, *S_drafted, *S_pct, *S_level_info, *S_level_debug, *S_t, *S_engine, *S_prompt,
    *S_generation, *S_level, *S_node, *S_start, *S_start_estimated, *S_values, *S_per_position,
    *S_drafts, *S_drafts_exact, *S_empty, *S_empty_bytes, *S_end, *S_drafts_estimated, *S_round,
    *S_two;

/* fs_parse_hot(line) -> None or a tuple of what was read (tests compare it with the Python path) */
static PyObject *mod_parse_hot(PyObject *mod, PyObject *args) {
    Py_buffer view;
    int crlf = 0;
    if (!PyArg_ParseTuple(args, "y*|p", &view, &crlf)) return NULL;
    Hot h;
    int ok = fs_parse_hot(view.buf, (const uint8_t *)view.buf + view.len, crlf, &h);
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
    {"parse_hot", (PyCFunction)mod_parse_hot, METH_VARARGS, "fs_parse_hot(line, crlf=False)"},
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
    fs_init_classes();
    if (!S_two && !(S_two = PyLong_FromLong(2))) return NULL;
    if (!S_empty && !(S_empty = PyTuple_New(0))) return NULL;
    if (!S_empty_bytes && !(S_empty_bytes = PyBytes_FromStringAndSize("", 0))) return NULL;
    if (PyType_Ready(&fs_ScannerType) < 0 || PyType_Ready(&fs_HotStateType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&fs_ScannerType);
    Py_INCREF(&fs_HotStateType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&fs_ScannerType) < 0 ||
        PyModule_AddObject(m, "HotState", (PyObject *)&fs_HotStateType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
