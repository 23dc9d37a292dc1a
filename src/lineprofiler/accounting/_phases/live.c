/* The live file: a mirror of the tree's nodes and of the counters in a shared mapping of one file
 * beside the worker file, so that every entry and count is in the page cache the instant it is
 * recorded and survives a SIGKILL or the OOM killer; only a machine crash loses the tail.
 *
 * Layout: a header page (lp_live_header: identity, layout, the published record counts), then
 * segments appended as the tree grows, each a segment header (lp_live_segment) and one chunk of
 * records. The file is mapped into one reserved range of address space at the offsets it has on
 * disk, so the range says what is ours.
 *
 * The file is a guest's notebook, not the process's memory. The tree and the counters live in
 * private memory; each record is only ever written, from the private values, never read back:
 * whatever another process does to the file, it cannot steer this one. Two things it can do are
 * handled here:
 *
 * - It can shrink the file (truncate it, copy a shorter file over it): a store into a page past
 *   the new end raises SIGBUS. The handler (live_ranges.c) recognises an address in one of our
 *   ranges, maps anonymous memory over the whole range (the store then completes into memory that goes
 *   nowhere), marks the file lost, and returns; the recorder notices at its next snapshot, records
 *   why, and lets the file go. Every other SIGBUS goes to the handler that was there before us.
 * - A fork child shares the parent's mapping until it detaches. A child made by a fork that
 *   bypasses Python's hooks (a C extension's, ctypes') runs none of them, so a pthread_atfork
 *   child handler maps anonymous memory over every range first: the child cannot write the
 *   parent's file, whatever it records before its profiler notices it is a new process. */
#include "phases.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LP_SEG_MAGIC 0x4753504Cu /* "LPSG" */

typedef struct {
    uint32_t magic; /* written last: a zero-filled segment was never completed */
    uint32_t kind;  /* LP_SEG_NODES, LP_SEG_COUNTERS */
    int32_t index;  /* the chunk's index among chunks of its kind */
    uint32_t bytes; /* the whole segment, header included */
} lp_live_segment;

/* ===================================================================== sizes */

static size_t lp_page(void)
{
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? (size_t)page : 4096;
}

static size_t lp_seg_bytes(size_t payload)
{
    size_t p = lp_page();
    return (LP_LIVE_SEGMENT + payload + p - 1) / p * p;
}

#define LP_NODE_SEG    lp_seg_bytes(LP_NODE_CHUNK * sizeof(lp_live_node))
#define LP_COUNTER_SEG lp_seg_bytes(LP_COUNTER_CHUNK * sizeof(lp_live_counter))

/* Address space for the largest file these caps can make: the header, every node chunk (root
 * and overflow included) and every counter chunk (the overflow counter included). Reserved,
 * not committed. */
static size_t lp_live_reserve_bytes(lp_RecorderObject *rec)
{
    size_t node_chunks = ((size_t)rec->max_paths + 2 + LP_NODE_CHUNK - 1) / LP_NODE_CHUNK;
    size_t counter_chunks = ((size_t)rec->max_counters + 1 + LP_COUNTER_CHUNK - 1) / LP_COUNTER_CHUNK;
    size_t trace = rec->trace != NULL ? lp_seg_bytes(lp_trace_block_bytes(rec)) : 0;
    return LP_LIVE_HEADER + trace + node_chunks * LP_NODE_SEG + counter_chunks * LP_COUNTER_SEG;
}

/* Blocks reserved on disk, so a later store into the mapping cannot fault on a full disk where
 * the file system supports it; a plain extension elsewhere. */
static int lp_file_reserve(int fd, off_t off, size_t len)
{
    int r = posix_fallocate(fd, off, (off_t)len);
    if (r == 0) {
        return 0;
    }
    if (r == EOPNOTSUPP || r == EINVAL || r == ENOSYS) {
        return ftruncate(fd, off + (off_t)len);
    }
    errno = r;
    return -1;
}

/* The trace segment's blocks: the segment and trace headers reserved as above, the rest (the
 * thread rows, the open tables, the rings: 15 MB at the default capacities) a hole that gets
 * disk blocks page by page as records are written, so the file costs what it holds. A store into
 * a new page that finds the disk full faults; the SIGBUS handler lets the file go, as it does
 * for a shrunk file, and the snapshots keep everything. */
static int lp_file_reserve_sparse(int fd, off_t off, size_t len)
{
    size_t head = lp_seg_bytes(LP_TRACE_HEADER);
    if (lp_file_reserve(fd, off, head < len ? head : len) < 0) {
        return -1;
    }
    return head < len ? ftruncate(fd, off + (off_t)len) : 0;
}

/* ===================================================================== records */

/* A name's UTF-8 bytes, cut at a character boundary to LP_LIVE_NAME. */
static void lp_set_name(char *dst, uint16_t *len, uint8_t *cut, PyObject *name)
{
    Py_ssize_t n = 0;
    const char *utf8 = PyUnicode_AsUTF8AndSize(name, &n);
    if (utf8 == NULL) {
        PyErr_Clear(); /* a lone surrogate: the snapshot has the name, the live file says so */
        dst[0] = '?';
        *len = 1;
        *cut = 1;
        return;
    }
    *cut = n > LP_LIVE_NAME;
    if (n > LP_LIVE_NAME) {
        n = LP_LIVE_NAME;
        while (n > 0 && ((unsigned char)utf8[n] & 0xC0) == 0x80) {
            n--;
        }
    }
    memcpy(dst, utf8, (size_t)n);
    *len = (uint16_t)n;
}

/* Every field of a node's record from the private node (at attach, and for a new node). */
static void lp_record_fill(lp_live_node *r, const lp_node *node)
{
    __atomic_store_n(&r->seq, node->seq | 1u, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    r->id = node->id;
    r->parent = node->parent;
    r->depth = node->depth;
    r->entries = node->entries;
    r->wall_ns = node->wall_ns;
    r->self_ns = node->self_ns;
    r->cpu_ns = node->cpu_ns;
    r->cpu_missing = node->cpu_missing;
    r->min_ns = node->min_ns;
    r->max_ns = node->max_ns;
    r->io = node->io;
    r->sync = node->sync;
    r->overflow = node->overflow;
    memcpy(r->io_delta, node->io_delta, sizeof r->io_delta);
    r->io_measured = node->io_measured;
    r->io_failed = node->io_failed;
    memcpy(r->hist, node->hist, sizeof r->hist);
    if (node->name != NULL) {
        lp_set_name(r->lname, &r->lname_len, &r->lname_cut, node->name);
    } else {
        r->lname_len = 0;
        r->lname_cut = 0;
    }
    __atomic_store_n(&r->seq, node->seq & ~1u, __ATOMIC_RELEASE);
}

void lp_live_node_sync(lp_node *node)
{
    if (node->live != NULL) {
        lp_record_fill(node->live, node);
    }
}

/* The header's sign of life: the wall clock now, as of a phase exit at monotonic `mono_ns`.
 * The file's mtime cannot serve: stores into a shared mapping move it only at writeback. */
void lp_live_stamp_alive(lp_RecorderObject *rec, int64_t mono_ns)
{
    lp_live *lv = &rec->live;
    rec->live.alive_mono_ns = mono_ns;
    struct timespec ts;
    if (lv->hdr != NULL && clock_gettime(CLOCK_REALTIME, &ts) == 0) {
        __atomic_store_n(&lv->hdr->alive_unix_ns, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec,
                         __ATOMIC_RELAXED);
    }
}

static void lp_counter_fill(lp_live_counter *r, const lp_counter *c)
{
    r->node = c->node;
    r->total = c->total;
    lp_set_name(r->lname, &r->lname_len, &r->lname_cut, c->name);
}

static void lp_live_forget_records(lp_RecorderObject *rec)
{
    for (int32_t id = 0; id < rec->n_nodes; id++) {
        lp_node_at(rec, id)->live = NULL;
    }
    for (int32_t i = 0; i < rec->n_counters; i++) {
        lp_counter_at(rec, i)->live = NULL;
    }
    lp_live *lv = &rec->live;
    for (int32_t c = 0; c < lv->records_cap; c++) {
        lv->node_records[c] = NULL;
        lv->counter_records[c] = NULL;
    }
    lv->n_nodes = lv->n_counters = 0;
}

/* ===================================================================== growth */

int lp_live_mine(lp_RecorderObject *rec)
{
    return rec->live.fd >= 0 && rec->live.pid == (long)getpid();
}

/* Stops adding segments: what the file holds stays exact and current; nodes and counters made
 * from now on are in the snapshots only. Readers see the flag. */
static void lp_live_freeze(lp_RecorderObject *rec, const char *what, int err)
{
    lp_live *lv = &rec->live;
    if (lv->frozen) {
        return;
    }
    lv->frozen = 1;
    lv->hdr->flags = LP_LIVE_FROZEN; /* the only flag: the mapping is never read back */
    PyErr_Format(PyExc_OSError,
                 "%s: %s; it keeps what it has, and paths and counters made from now on are in "
                 "the snapshots only",
                 what, strerror(err));
    lp_record_error(rec, "live file");
}

static int lp_records_grow(lp_live *lv, int32_t need)
{
    if (need <= lv->records_cap) {
        return 0;
    }
    int32_t cap = lv->records_cap ? lv->records_cap : 16;
    while (cap < need) {
        cap *= 2;
    }
    lp_live_node **nodes = PyMem_Realloc(lv->node_records, (size_t)cap * sizeof *nodes);
    if (nodes == NULL) {
        return -1;
    }
    lv->node_records = nodes;
    lp_live_counter **counters = PyMem_Realloc(lv->counter_records, (size_t)cap * sizeof *counters);
    if (counters == NULL) {
        return -1;
    }
    lv->counter_records = counters;
    for (int32_t c = lv->records_cap; c < cap; c++) {
        nodes[c] = NULL;
        counters[c] = NULL;
    }
    lv->records_cap = cap;
    return 0;
}

/* Maps one more segment of the file after the last one and returns its records, or NULL (the
 * file is then frozen). */
static char *lp_live_add_segment(lp_RecorderObject *rec, int kind, int32_t index)
{
    lp_live *lv = &rec->live;
    size_t bytes = kind == LP_SEG_NODES      ? LP_NODE_SEG
                   : kind == LP_SEG_COUNTERS ? LP_COUNTER_SEG
                                             : lp_seg_bytes(lp_trace_block_bytes(rec));
    off_t off = (off_t)lv->size;
    if ((size_t)off + bytes > lv->reserved) {
        lp_live_freeze(rec, "the live file is at its reserved size", ENOSPC);
        return NULL;
    }
    if (lp_records_grow(lv, index + 1) < 0) {
        lp_live_freeze(rec, "no memory for the live file's index", ENOMEM);
        return NULL;
    }
    int grown = kind == LP_SEG_TRACE ? lp_file_reserve_sparse(lv->fd, off, bytes)
                                     : lp_file_reserve(lv->fd, off, bytes);
    if (grown < 0) {
        lp_live_freeze(rec, "the live file could not grow", errno);
        return NULL;
    }
    char *seg = mmap(lv->base + off, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, lv->fd, off);
    if (seg == MAP_FAILED) {
        int err = errno;
        /* the reservation, back where the mapping failed */
        (void)mmap(lv->base + off, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
                   -1, 0);
        lp_live_freeze(rec, "the live file could not be mapped", err);
        return NULL;
    }
    lv->size = (int64_t)(off + (off_t)bytes);
    lp_live_segment *head = (lp_live_segment *)seg;
    head->kind = (uint32_t)kind;
    head->index = index;
    head->bytes = (uint32_t)bytes;
    __atomic_store_n(&head->magic, LP_SEG_MAGIC, __ATOMIC_RELEASE);
    return seg + LP_LIVE_SEGMENT;
}

/* A new private chunk of nodes or counters: its segment in the file, where one can be had. */
void lp_live_chunk_added(lp_RecorderObject *rec, int kind, int32_t index)
{
    if (!lp_live_check(rec) || rec->live.frozen) {
        return;
    }
    lp_live *lv = &rec->live;
    /* records are a prefix: a chunk after one that has none gets none either */
    if (index > 0) {
        int before = index - 1 < lv->records_cap &&
                     (kind == LP_SEG_NODES ? (void *)lv->node_records[index - 1]
                                           : (void *)lv->counter_records[index - 1]) != NULL;
        if (!before) {
            return;
        }
    }
    char *records = lp_live_add_segment(rec, kind, index);
    if (records == NULL) {
        return;
    }
    if (kind == LP_SEG_NODES) {
        lv->node_records[index] = (lp_live_node *)records;
    } else {
        lv->counter_records[index] = (lp_live_counter *)records;
    }
}

void lp_live_node_added(lp_RecorderObject *rec, lp_node *node)
{
    lp_live *lv = &rec->live;
    int32_t c = node->id / LP_NODE_CHUNK;
    node->live = NULL;
    if (lv->hdr == NULL || c >= lv->records_cap || lv->node_records[c] == NULL) {
        return;
    }
    node->live = &lv->node_records[c][node->id % LP_NODE_CHUNK];
    lp_record_fill(node->live, node);
    lv->n_nodes = node->id + 1;
    lp_live_publish(rec);
}

void lp_live_counter_added(lp_RecorderObject *rec, lp_counter *counter)
{
    lp_live *lv = &rec->live;
    int32_t i = rec->n_counters - 1; /* counter is the newest */
    int32_t c = i / LP_COUNTER_CHUNK;
    counter->live = NULL;
    if (lv->hdr == NULL || c >= lv->records_cap || lv->counter_records[c] == NULL) {
        return;
    }
    counter->live = &lv->counter_records[c][i % LP_COUNTER_CHUNK];
    lp_counter_fill(counter->live, counter);
    lv->n_counters = i + 1;
    lp_live_publish(rec);
}

/* ===================================================================== attach and detach */

/* The trace block's segment, first after the header (a frozen file keeps the trace private). */
static void lp_live_add_trace(lp_RecorderObject *rec)
{
    if (rec->trace == NULL) {
        return;
    }
    char *block = lp_live_add_segment(rec, LP_SEG_TRACE, 0);
    if (block != NULL) {
        lp_trace_to_file(rec, block);
    }
}

void lp_live_detach(lp_RecorderObject *rec)
{
    lp_live *lv = &rec->live;
    lp_trace_from_file(rec);
    lp_live_forget_records(rec);
    if (lv->base != NULL) {
        lp_range_release(lv->slot);
        (void)munmap(lv->base, lv->reserved);
    }
    if (lv->fd >= 0) {
        (void)close(lv->fd);
    }
    PyMem_Free(lv->node_records);
    PyMem_Free(lv->counter_records);
    memset(lv, 0, sizeof *lv);
    lv->fd = -1;
    lv->slot = -1;
}

/* Whether the live file is still this process's to write (1), after letting it go if it was
 * lost: shrunk under us (the SIGBUS handler's mark), or the parent's, in a fork child. */
int lp_live_check(lp_RecorderObject *rec)
{
    lp_live *lv = &rec->live;
    if (lv->fd < 0) {
        return 0;
    }
    int state = lv->slot >= 0 ? lp_range_state(lv->slot) : LP_RANGE_OK;
    if (state == LP_RANGE_LOST) {
        PyErr_Format(PyExc_OSError,
                     "another process shrank or replaced it while it was mapped, or the disk was full "
                     "(a store at offset %zd faulted); it was let go, and the numbers are in the snapshots "
                     "only from now on",
                     (Py_ssize_t)(lp_range_fault(lv->slot) - (uintptr_t)lv->base));
        lp_record_error(rec, "live file lost");
        lp_live_detach(rec);
        return 0;
    }
    if (state == LP_RANGE_FORKED || !lp_live_mine(rec)) {
        lp_live_detach(rec); /* the parent's file: the child never writes to it */
        return 0;
    }
    return 1;
}

/* reset(): in a fork child the parent's file is let go untouched; in the process that made
 * it, the file is emptied to its header and the epoch bumped, so a reader starts over. */
void lp_live_before_reset(lp_RecorderObject *rec)
{
    if (!lp_live_check(rec)) {
        return;
    }
    lp_live *lv = &rec->live;
    __atomic_store_n(&lv->hdr->n_nodes, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&lv->hdr->n_counters, 0, __ATOMIC_RELEASE);
    lv->epoch++;
    __atomic_store_n(&lv->hdr->epoch, lv->epoch, __ATOMIC_RELEASE);
    lp_live_forget_records(rec);
    lp_trace_from_file(rec);
    /* the segments' range back to a reservation before the file shrinks under it */
    (void)mmap(lv->base + LP_LIVE_HEADER, lv->reserved - LP_LIVE_HEADER, PROT_NONE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    if (ftruncate(lv->fd, LP_LIVE_HEADER) < 0) {
        lv->size = LP_LIVE_HEADER;
        lp_live_freeze(rec, "the live file could not be emptied", errno);
        return;
    }
    lv->size = LP_LIVE_HEADER;
    lv->frozen = 0;
    lv->hdr->flags = 0;
    lp_live_add_trace(rec);
}

static void lp_live_fill_header(lp_RecorderObject *rec, lp_live_header *h, const char *ident, Py_ssize_t n)
{
    memset(h, 0, sizeof *h);
    h->version = LP_LIVE_VERSION;
    h->header_bytes = LP_LIVE_HEADER;
    h->segment_bytes = LP_LIVE_SEGMENT;
    h->node_bytes = sizeof(lp_live_node);
    h->counter_bytes = sizeof(lp_live_counter);
    h->chunk_nodes = LP_NODE_CHUNK;
    h->chunk_counters = LP_COUNTER_CHUNK;
    h->n_buckets = LP_N_BUCKETS;
    h->name_bytes = LP_LIVE_NAME;
    h->measure_cpu = (uint32_t)rec->measure_cpu;
    h->pid = (int64_t)getpid();
    struct timespec ts;
    h->created_unix_ns =
        clock_gettime(CLOCK_REALTIME, &ts) == 0 ? (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec : 0;
    h->alive_unix_ns = h->created_unix_ns;
    h->off_seq = offsetof(lp_live_node, seq);
    h->off_id = offsetof(lp_live_node, id);
    h->off_parent = offsetof(lp_live_node, parent);
    h->off_entries = offsetof(lp_live_node, entries);
    h->off_wall = offsetof(lp_live_node, wall_ns);
    h->off_self = offsetof(lp_live_node, self_ns);
    h->off_cpu = offsetof(lp_live_node, cpu_ns);
    h->off_cpu_missing = offsetof(lp_live_node, cpu_missing);
    h->off_min = offsetof(lp_live_node, min_ns);
    h->off_max = offsetof(lp_live_node, max_ns);
    h->off_io = offsetof(lp_live_node, io);
    h->off_sync = offsetof(lp_live_node, sync);
    h->off_overflow = offsetof(lp_live_node, overflow);
    h->off_depth = offsetof(lp_live_node, depth);
    h->off_io_delta = offsetof(lp_live_node, io_delta);
    h->off_io_measured = offsetof(lp_live_node, io_measured);
    h->off_io_failed = offsetof(lp_live_node, io_failed);
    h->off_hist = offsetof(lp_live_node, hist);
    h->off_lname_len = offsetof(lp_live_node, lname_len);
    h->off_lname_cut = offsetof(lp_live_node, lname_cut);
    h->off_lname = offsetof(lp_live_node, lname);
    h->coff_node = offsetof(lp_live_counter, node);
    h->coff_total = offsetof(lp_live_counter, total);
    h->coff_lname_len = offsetof(lp_live_counter, lname_len);
    h->coff_lname_cut = offsetof(lp_live_counter, lname_cut);
    h->coff_lname = offsetof(lp_live_counter, lname);
    h->identity_len = (uint32_t)n;
    memcpy(h->identity, ident, (size_t)n);
}

/* Records for every node and counter made before the file was attached. */
static void lp_live_copy_tree(lp_RecorderObject *rec)
{
    for (int32_t c = 0; c * LP_NODE_CHUNK < rec->n_nodes; c++) {
        lp_live_chunk_added(rec, LP_SEG_NODES, c);
    }
    for (int32_t id = 0; id < rec->n_nodes; id++) {
        lp_live_node_added(rec, lp_node_at(rec, id));
    }
    for (int32_t c = 0; c * LP_COUNTER_CHUNK < rec->n_counters; c++) {
        lp_live_chunk_added(rec, LP_SEG_COUNTERS, c);
    }
    lp_live *lv = &rec->live;
    for (int32_t i = 0; i < rec->n_counters; i++) {
        lp_counter *counter = lp_counter_at(rec, i);
        int32_t c = i / LP_COUNTER_CHUNK;
        if (c < lv->records_cap && lv->counter_records[c] != NULL) {
            counter->live = &lv->counter_records[c][i % LP_COUNTER_CHUNK];
            lp_counter_fill(counter->live, counter);
            lv->n_counters = i + 1;
        }
    }
    lp_live_publish(rec);
}

static PyObject *lp_attach_failed(int fd, char *base, size_t reserved, int slot)
{
    int err = errno;
    lp_range_release(slot);
    if (base != NULL) {
        (void)munmap(base, reserved);
    }
    (void)close(fd);
    errno = err;
    return PyErr_SetFromErrno(PyExc_OSError);
}

PyObject *lp_recorder_live_attach(lp_RecorderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "live_attach(fd, identity) takes an int and bytes");
        return NULL;
    }
    long fd = PyLong_AsLong(args[0]);
    if (fd == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t n = PyBytes_GET_SIZE(args[1]);
    if (n > LP_LIVE_IDENTITY) {
        PyErr_Format(PyExc_ValueError, "identity over %d bytes", LP_LIVE_IDENTITY);
        return NULL;
    }
    if (lp_live_check(self)) {
        PyErr_SetString(PyExc_RuntimeError, "a live file is already attached");
        return NULL;
    }
    if (lp_ranges_ready() < 0) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    int dfd = fcntl((int)fd, F_DUPFD_CLOEXEC, 0);
    if (dfd < 0) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    size_t reserved = lp_live_reserve_bytes(self);
    char *base = mmap(NULL, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        return lp_attach_failed(dfd, NULL, 0, -1);
    }
    int slot = lp_range_claim(base, reserved, dfd);
    if (slot < 0) {
        (void)munmap(base, reserved);
        (void)close(dfd);
        PyErr_Format(PyExc_OSError, "%d live files are mapped in this process already", LP_LIVE_SLOTS);
        return NULL;
    }
    if (ftruncate(dfd, 0) < 0 || lp_file_reserve(dfd, 0, LP_LIVE_HEADER) < 0 ||
        mmap(base, LP_LIVE_HEADER, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, dfd, 0) == MAP_FAILED) {
        return lp_attach_failed(dfd, base, reserved, slot);
    }
    lp_live *lv = &self->live;
    lv->fd = dfd;
    lv->pid = (long)getpid();
    lv->slot = slot;
    lv->base = base;
    lv->reserved = reserved;
    lv->size = LP_LIVE_HEADER;
    lv->hdr = (lp_live_header *)base;
    lp_live_fill_header(self, lv->hdr, PyBytes_AS_STRING(args[1]), n);
    lp_live_add_trace(self);
    lp_live_copy_tree(self);
    if (!lp_live_check(self)) {
        PyErr_SetString(PyExc_OSError, "the live file was lost while it was being written");
        return NULL;
    }
    memcpy(lv->hdr->magic, "LPLIVE\0\0", 8);
    Py_RETURN_NONE;
}

PyObject *lp_recorder_live_detach(lp_RecorderObject *self, PyObject *Py_UNUSED(ignored))
{
    lp_live_detach(self);
    Py_RETURN_NONE;
}

PyObject *lp_recorder_get_live(lp_RecorderObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(lp_live_check(self));
}
