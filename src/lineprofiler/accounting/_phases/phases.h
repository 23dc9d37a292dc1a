/* The internal header of the _phases extension: its constants, its types, the functions its
 * files share, and the small helpers the phase hot path inlines (one header each, below).
 *
 * A Recorder owns one phase tree (per process: a fork child resets it). A Phase is a cached
 * C context manager, one per (name, io, sync), so steady state allocates nothing per `with`.
 * Open frames live on a stack per flow of control: one per contextvars.Context (a thread's own
 * context, each asyncio task's), kept as the value of a ContextVar; frames of several recorders
 * may interleave on it. A context's first phase makes its stack, which starts from the phases
 * open in the context it was copied from (its base frames), so a task nests under the phase that
 * was open where it started. Every mutation happens with the GIL held, so the tree needs no
 * lock; the sampler thread reads only the atomics published through the capsule (see
 * _phases_capi.h).
 *
 * Generations: a recorder's `gen` changes at stop, start and reset (the fork child). A frame
 * remembers the generation it was pushed in; a frame of an older generation is stale and is
 * popped without being recorded, which is what gives a fork child a clean phase stack without
 * touching the (copied) stacks of threads that no longer exist.
 *
 * Files, by idea: module.c (the module, its functions and state), recorder.c (the Recorder
 * type, names, hooks), errors.c (its calls into Python and the errors they raise), phase.c (the
 * Phase type, enter and exit), stack.c (the stacks: making, inheriting, the search for a frame
 * another flow left open), tree.c (nodes and paths), counters.c (count()), histogram.c (the
 * bucket table), snapshot.c (the tree as Python objects), own_io.c (/proc/self/io and the
 * profiler's own I/O), noop.c (the disabled profiler), threads.c (each thread's innermost phase,
 * for the sampler), live.c (the live file), live_ranges.c (its mapped ranges, the SIGBUS handler
 * and the fork hook), spans.c (the trace's block), spans_snapshot.c (the trace as Python
 * objects).
 *
 * This header includes the others, each one idea: constants.h, compat.h (what differs between
 * Python versions), live_file.h (the live file's layout), tree.h (nodes and counters), trace.h
 * (the trace's layout), objects.h (the module state and the Python objects), functions.h (what
 * the files share), hot_path.h and trace_hot_path.h (what the phase hot path inlines). */
#ifndef LP_PHASES_H
#define LP_PHASES_H

#include "constants.h"
#include "compat.h"
#include "live_file.h"
#include "tree.h"
#include "trace.h"
#include "objects.h"
#include "functions.h"
#include "hot_path.h"
#include "trace_hot_path.h"

#endif /* LP_PHASES_H */
