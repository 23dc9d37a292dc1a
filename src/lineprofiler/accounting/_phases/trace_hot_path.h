/* The trace's hot path, inlined into a phase's exit: a closed entry into the ring. */
#ifndef LP_PHASES_TRACE_HOT_PATH_H
#define LP_PHASES_TRACE_HOT_PATH_H

#include "functions.h"

/* The calling thread's index in the trace's thread table (-1: the table is full). */
LP_INLINE int32_t lp_trace_thread_of(lp_RecorderObject *rec, PyThreadState *tstate)
{
    lp_trace *tr = rec->trace;
    if (LP_LIKELY(tr->tkey == (uint64_t)tstate->id + 1)) {
        return tr->tidx;
    }
    return lp_trace_thread_slow(rec, tstate);
}

static inline void lp_span_store(lp_span *s, int64_t start, int64_t end, int64_t cpu, int32_t phase_id,
                                 int32_t thread, uint32_t seq)
{
    __atomic_store_n(&s->seq, 0u, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    s->start_ns = start;
    s->end_ns = end;
    s->cpu_ns = cpu;
    s->phase_id = phase_id;
    s->thread = thread;
    __atomic_store_n(&s->seq, seq, __ATOMIC_RELEASE);
}

/* One closed entry into the ring (and its copy in the live file): a few stores, no call. */
LP_INLINE void lp_trace_span(lp_trace *tr, int64_t start, int64_t end, int64_t cpu, int32_t phase_id,
                             int32_t thread)
{
    int64_t n = tr->h.recorded + 1;
    int64_t slot = tr->next;
    tr->next = slot + 1 == tr->capacity ? 0 : slot + 1;
    size_t off = (size_t)tr->h.off_spans + (size_t)slot * sizeof(lp_span);
    lp_span_store((lp_span *)(tr->mem + off), start, end, cpu, phase_id, thread, (uint32_t)n);
    tr->h.recorded = n;
    ((lp_trace_header *)tr->mem)->recorded = n;
    if (tr->file != NULL) {
        lp_span_store((lp_span *)(tr->file + off), start, end, cpu, phase_id, thread, (uint32_t)n);
        __atomic_store_n(&((lp_trace_header *)tr->file)->recorded, n, __ATOMIC_RELEASE);
    }
}

/* The stack's open table after its entry at `level` closed (the fast exit). */
LP_INLINE void lp_trace_popped(lp_RecorderObject *rec, lp_StackObject *ts, int32_t level)
{
    lp_trace *tr = rec->trace;
    if (tr->file != NULL && ts->trace_epoch == tr->epoch && ts->trace_slot >= 0 && level >= 0) {
        lp_open_stack *os = (lp_open_stack *)(tr->file + tr->h.off_stacks) + ts->trace_slot;
        __atomic_store_n(&os->depth, level, __ATOMIC_RELEASE);
    }
}

#endif /* LP_PHASES_TRACE_HOT_PATH_H */
