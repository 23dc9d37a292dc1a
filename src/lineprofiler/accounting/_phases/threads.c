/* Every thread's innermost phase, published for the sampler's timeline: a fixed table of slots
 * in the module state, shared through the capsule. A thread claims a slot the first time it
 * enters or leaves a phase of the primary recorder, and keeps it while the stack it last
 * published from lives; a thread's own stack dies with the thread, which frees the slot.
 *
 * Everything here runs with the GIL held; the sampler thread only reads the slots, so a slot
 * is written in an order that never shows a half-made one: a claim sets the phase and the tid
 * before the owner (release), a free clears the owner first. */
#include "phases.h"

#include <stddef.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* ===================================================================== slots */

static int64_t lp_os_tid(void)
{
#if defined(__linux__)
    return (int64_t)syscall(SYS_gettid);
#else
    return (int64_t)PyThread_get_thread_ident();
#endif
}

/* A slot back to "in no phase, since when not known, nothing before". */
static void lp_slot_forget(lp_thread_slot *s)
{
    uint32_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&s->phase, -1, memory_order_relaxed);
    atomic_store_explicit(&s->since_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&s->prev_phase, -1, memory_order_relaxed);
    atomic_store_explicit(&s->prev_since_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&s->prev_end_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
}

static void lp_slot_free(lp_state *st, int32_t i)
{
    atomic_store_explicit(&st->threads[i].owner, 0, memory_order_release);
    lp_slot_forget(&st->threads[i]);
    st->slot_stack[i] = NULL;
    if (st->pub_slot == i) {
        st->pub_key = 0;
    }
}

static void lp_after_fork_child(lp_phases_capi *api);

void lp_threads_init(lp_state *st)
{
    for (int32_t i = 0; i < LP_THREAD_SLOTS; i++) {
        atomic_init(&st->threads[i].owner, 0);
        atomic_init(&st->threads[i].tid, 0);
        atomic_init(&st->threads[i].phase, -1);
        atomic_init(&st->threads[i].since_ns, 0);
        atomic_init(&st->threads[i].prev_phase, -1);
        atomic_init(&st->threads[i].prev_since_ns, 0);
        atomic_init(&st->threads[i].prev_end_ns, 0);
        atomic_init(&st->threads[i].seq, 0);
        st->slot_stack[i] = NULL;
    }
    atomic_init(&st->threads_unpublished, 0);
    st->pub_key = 0;
    st->pub_slot = 0;
    st->capi.threads = st->threads;
    st->capi.threads_unpublished = &st->threads_unpublished;
    st->capi.after_fork_child = lp_after_fork_child;
}

/* The calling thread's slot: found by its key, else claimed. -1 when every slot is taken. */
void lp_thread_publish_slow(lp_state *st, PyThreadState *tstate, lp_StackObject *ts, int32_t node_id,
                            int64_t now_ns)
{
    uint64_t key = (uint64_t)tstate->id + 1;
    int32_t start = (int32_t)(key % LP_THREAD_SLOTS), free_slot = -1;
    for (int32_t k = 0; k < LP_THREAD_SLOTS; k++) {
        int32_t i = (start + k) % LP_THREAD_SLOTS;
        uint64_t owner = atomic_load_explicit(&st->threads[i].owner, memory_order_relaxed);
        if (owner == key) {
            free_slot = i;
            break;
        }
        if (owner == 0 && free_slot < 0) {
            free_slot = i;
        }
    }
    if (free_slot < 0) {
        if (node_id >= 0) {
            atomic_fetch_add_explicit(&st->threads_unpublished, 1, memory_order_relaxed);
        }
        return;
    }
    lp_thread_slot *slot = &st->threads[free_slot];
    if (atomic_load_explicit(&slot->owner, memory_order_relaxed) != key) {
        lp_slot_forget(slot); /* a new owner: what the slot showed was another thread's */
    }
    lp_slot_set(slot, node_id, now_ns);
    if (atomic_load_explicit(&slot->owner, memory_order_relaxed) != key) {
        atomic_store_explicit(&slot->tid, lp_os_tid(), memory_order_relaxed);
        atomic_store_explicit(&slot->owner, key, memory_order_release);
    }
    st->slot_stack[free_slot] = ts;
    st->pub_key = key;
    st->pub_slot = free_slot;
}

/* Another thread changed `ts`: the slot that last published from it shows its new innermost. */
void lp_threads_stack_changed(lp_state *st, lp_StackObject *ts, int32_t node_id, int64_t now_ns)
{
    for (int32_t i = 0; i < LP_THREAD_SLOTS; i++) {
        if (st->slot_stack[i] == ts) {
            lp_slot_set(&st->threads[i], node_id, now_ns);
        }
    }
}

/* A stack's dealloc: the thread that published from it last has left (or its flow has). */
void lp_threads_stack_gone(lp_state *st, lp_StackObject *ts)
{
    for (int32_t i = 0; i < LP_THREAD_SLOTS; i++) {
        if (st->slot_stack[i] == ts) {
            lp_slot_free(st, i);
        }
    }
}

/* The primary recorder stopped, reset or went: no thread is in one of its phases. */
void lp_threads_clear(lp_state *st)
{
    int64_t now = lp_monotonic_ns();
    for (int32_t i = 0; i < LP_THREAD_SLOTS; i++) {
        lp_slot_set(&st->threads[i], -1, now);
    }
}

/* In a fork child: only the forking thread exists; it keeps its slot, under its new tid. */
static void lp_after_fork_child(lp_phases_capi *api)
{
    lp_state *st = (lp_state *)((char *)api - offsetof(lp_state, capi));
    PyThreadState *tstate = PyThreadState_Get();
    uint64_t key = (uint64_t)tstate->id + 1;
    for (int32_t i = 0; i < LP_THREAD_SLOTS; i++) {
        uint64_t owner = atomic_load_explicit(&st->threads[i].owner, memory_order_relaxed);
        if (owner == key) {
            atomic_store_explicit(&st->threads[i].tid, lp_os_tid(), memory_order_relaxed);
        } else if (owner != 0) {
            lp_slot_free(st, i);
        }
    }
    atomic_store_explicit(&st->threads_unpublished, 0, memory_order_relaxed);
}
