/* The functions the _phases extension's files share, by the file that defines them. */
#ifndef LP_PHASES_FUNCTIONS_H
#define LP_PHASES_FUNCTIONS_H

#include "objects.h"

extern struct PyModuleDef lp_phases_module;
extern PyType_Spec lp_recorder_spec;
extern PyType_Spec lp_phase_spec;
extern PyType_Spec lp_stack_spec;
extern PyType_Spec lp_noop_spec;
extern PyType_Spec lp_noop_phase_spec;

/* errors.c */
void lp_record_error(lp_RecorderObject *rec, const char *where);
void lp_call_hook(lp_RecorderObject *rec, PyObject *fn, PyObject *arg, const char *where);
int64_t lp_py_clock(lp_RecorderObject *rec, PyObject *fn, const char *where);

/* recorder.c */
PyObject *lp_canonical(lp_RecorderObject *rec, PyObject *name, int may_insert);
int lp_parse_phase_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **name,
                        int *flags);
int lp_check_callable(PyObject *fn, const char *what);

/* tree.c */
lp_node *lp_child_lookup(lp_RecorderObject *rec, int32_t parent, PyObject *canon);
void lp_tree_free(lp_RecorderObject *rec);
int lp_tree_init(lp_RecorderObject *rec);
PyObject *lp_node_path(lp_RecorderObject *rec, int32_t id);

/* live.c */
void lp_live_node_added(lp_RecorderObject *rec, lp_node *node);
void lp_live_counter_added(lp_RecorderObject *rec, lp_counter *c);
void lp_live_chunk_added(lp_RecorderObject *rec, int kind, int32_t index);
void lp_live_node_sync(lp_node *node);
void lp_live_stamp_alive(lp_RecorderObject *rec, int64_t mono_ns);
void lp_live_before_reset(lp_RecorderObject *rec);
void lp_live_detach(lp_RecorderObject *rec);
int lp_live_check(lp_RecorderObject *rec);
int lp_live_mine(lp_RecorderObject *rec);
PyObject *lp_recorder_live_attach(lp_RecorderObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *lp_recorder_live_detach(lp_RecorderObject *self, PyObject *ignored);
PyObject *lp_recorder_get_live(lp_RecorderObject *self, void *c);

/* live_ranges.c */
int lp_ranges_ready(void);
int lp_range_claim(char *base, size_t bytes, int fd);
void lp_range_release(int slot);
int lp_range_state(int slot);
uintptr_t lp_range_fault(int slot);
PyObject *lp_mod_live_ranges(PyObject *module, PyObject *ignored);

/* counters.c */
PyObject *lp_recorder_count(lp_RecorderObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames);

/* snapshot.c */
PyObject *lp_recorder_snapshot(lp_RecorderObject *self, PyObject *ignored);
PyObject *lp_recorder_path_of(lp_RecorderObject *self, PyObject *arg);
PyObject *lp_recorder_current_path(lp_RecorderObject *self, PyObject *ignored);

/* histogram.c */
void lp_init_edges(lp_state *st);
PyObject *lp_mod_bucket_edges(PyObject *module, PyObject *ignored);
PyObject *lp_mod_bucket_index(PyObject *module, PyObject *arg);

/* own_io.c */
void lp_io_init(lp_state *st);
void lp_io_close(lp_state *st);
int lp_io_now(lp_state *st, lp_io_counters *out, int count_own);
PyObject *lp_io_dict(const int64_t *v);
PyObject *lp_mod_read_io(PyObject *module, PyObject *ignored);
int lp_io_measure(lp_state *st, int64_t *own, lp_io_counters *out);
PyObject *lp_mod_own_io_begin(PyObject *module, PyObject *ignored);
PyObject *lp_mod_own_io_end(PyObject *module, PyObject *token);
PyObject *lp_mod_own_io(PyObject *module, PyObject *ignored);
PyObject *lp_mod_reap_own_child(PyObject *module, PyObject *pid);
#ifdef LP_DEV_SEAMS
PyObject *lp_mod_set_io_path(PyObject *module, PyObject *arg); /* a development build's only */
PyObject *lp_mod_hold_own_read(PyObject *module, PyObject *args);
#endif

/* stack.c */
lp_StackObject *lp_stack_create(lp_state *st, PyThreadState *tstate, lp_StackObject *parent);
int lp_grow_frames(lp_StackObject *ts);
lp_StackObject *lp_stack_find_open(lp_state *st, lp_PhaseObject *phase, lp_StackObject *skip, int32_t *idx);
lp_frame *lp_origin_frame(lp_frame *base);
void lp_credit_origin(lp_frame *base, int64_t d);

/* threads.c */
void lp_threads_init(lp_state *st);
void lp_thread_publish_slow(lp_state *st, PyThreadState *tstate, struct lp_StackObject *ts, int32_t node_id,
                            int64_t now_ns);
void lp_threads_stack_changed(lp_state *st, struct lp_StackObject *ts, int32_t node_id, int64_t now_ns);
void lp_threads_stack_gone(lp_state *st, struct lp_StackObject *ts);
void lp_threads_clear(lp_state *st);

/* spans.c */
void lp_trace_free(lp_RecorderObject *rec);
void lp_trace_reset(lp_RecorderObject *rec);
void lp_trace_forget_stacks(lp_RecorderObject *rec);
size_t lp_trace_block_bytes(lp_RecorderObject *rec);
void lp_trace_to_file(lp_RecorderObject *rec, char *block);
void lp_trace_from_file(lp_RecorderObject *rec);
int32_t lp_trace_thread_slow(lp_RecorderObject *rec, PyThreadState *tstate);
void lp_trace_enter(lp_RecorderObject *rec, lp_StackObject *ts, int32_t idx, int32_t parent_idx,
                    int32_t thread);
void lp_trace_stack_sync(lp_RecorderObject *rec, lp_StackObject *ts, int may_claim);
void lp_trace_stack_gone(lp_state *st, lp_StackObject *ts);
PyObject *lp_recorder_trace_enable(lp_RecorderObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *lp_recorder_trace_link(lp_RecorderObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *lp_recorder_trace_clock_pair(lp_RecorderObject *self, PyObject *ignored);
PyObject *lp_recorder_get_tracing(lp_RecorderObject *self, void *c);
void lp_trace_rename_threads(lp_trace *tr);

/* spans_snapshot.c */
PyObject *lp_recorder_trace_snapshot(lp_RecorderObject *self, PyObject *args, PyObject *kwargs);

/* noop.c */
int lp_noop_init(PyObject *module, lp_state *st);

#endif /* LP_PHASES_FUNCTIONS_H */
