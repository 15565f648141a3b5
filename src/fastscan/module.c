/* module.c: the module sparktriage.logs._fastscan and its interned names. parse_hot is exposed
   for the tests that compare it with the Python parser. (The document's window rows were built
   here too until they were measured: 1.08x of CPU end to end, below the 1.5x that C code must
   earn, docs/benchmarks.md; they are built in Python, logs/document.py.) */

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


static PyMethodDef module_methods[] = {
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
