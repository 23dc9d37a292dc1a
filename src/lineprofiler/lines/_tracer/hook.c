/* The Hook type: the callback objects a Tracer hands out (Tracer.hook()), each a vectorcall
 * straight into this build's event path (monitoring.c or settrace.c). */
#include "tracer.h"

#include <stddef.h>

#if PY_VERSION_HEX >= 0x030C0000
#define LP_T_PYSSIZET Py_T_PYSSIZET
#define LP_READONLY   Py_READONLY
#else
#define LP_T_PYSSIZET T_PYSSIZET
#define LP_READONLY   READONLY
#endif

const char *const lp_hook_names[LP_HOOK_COUNT] = {
    "line", "start", "resume", "return", "yield", "unwind", "throw", "thread",
};

static PyObject *lp_on_nothing(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LP_UNUSED(self);
    LP_UNUSED(args);
    LP_UNUSED(nargsf);
    LP_UNUSED(kwnames);
    Py_RETURN_NONE;
}

static vectorcallfunc lp_hook_func(int kind)
{
    vectorcallfunc f = lp_path_callback(kind);
    return f != NULL ? f : lp_on_nothing;
}

/* Returns a new reference to a Hook of `kind` bound to tr. */
PyObject *lp_hook_new(lp_TracerObject *tr, int kind, lp_thread *th)
{
    lp_HookObject *h = PyObject_GC_New(lp_HookObject, tr->st->hook_type);
    if (h == NULL) {
        return NULL;
    }
    h->vectorcall = lp_hook_func(kind);
    h->tracer = (lp_TracerObject *)Py_NewRef((PyObject *)tr);
    h->thread = th;
    h->kind = kind;
    PyObject_GC_Track(h);
    return (PyObject *)h;
}

static int lp_hook_traverse(lp_HookObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->tracer);
    return 0;
}

static int lp_hook_clear(lp_HookObject *self)
{
    /* A cleared hook must stay safe to call: point it at a no-op. */
    self->vectorcall = lp_on_nothing;
    Py_CLEAR(self->tracer);
    return 0;
}

static void lp_hook_dealloc(lp_HookObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->tracer);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

static PyObject *lp_hook_repr(lp_HookObject *self)
{
    return PyUnicode_FromFormat("<lineprofiler hook %s>", lp_hook_names[self->kind]);
}

static PyMemberDef lp_hook_members[] = {
    {"__vectorcalloffset__", LP_T_PYSSIZET, offsetof(lp_HookObject, vectorcall), LP_READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot lp_hook_slots[] = {
    {Py_tp_doc, "A callback of the line tracer (made by Tracer.hook(); not for direct use)."},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_members, lp_hook_members},
    {Py_tp_traverse, lp_hook_traverse},
    {Py_tp_clear, lp_hook_clear},
    {Py_tp_dealloc, lp_hook_dealloc},
    {Py_tp_repr, lp_hook_repr},
    {0, NULL},
};

PyType_Spec lp_hook_spec = {
    .name = "lineprofiler.lines._tracer.Hook",
    .basicsize = sizeof(lp_HookObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
             Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = lp_hook_slots,
};
