/* The live file: the tree's node chunks and the counter chunks as shared mappings of one file
 * beside the worker file, so that every entry and count is in the page cache the instant it is
 * recorded and survives a SIGKILL or the OOM killer; only a machine crash loses the tail.
 *
 * Layout: a header page (lp_live_header: identity, layout, the published node and counter
 * counts), then segments appended as the tree grows, each a segment header (lp_live_segment)
 * and one chunk. Chunks are always whole pages of their own mapping (anonymous until a file is
 * attached), so attaching copies each chunk into the file and maps the file over the same
 * address: node and counter pointers never move. A fork child detaches at its reset and never
 * writes to its parent's file. */
#include "phases.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define LP_SEG_MAGIC 0x4753504Cu /* "LPSG" */

typedef struct {
    uint32_t magic; /* written last: a zero-filled segment was never completed */
    uint32_t kind;  /* LP_SEG_NODES, LP_SEG_COUNTERS */
    int32_t index;  /* the chunk's index among chunks of its kind */
    uint32_t bytes; /* the whole segment, header included */
} lp_live_segment;

/* ===================================================================== chunks */

static size_t lp_seg_bytes(size_t payload)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t p = page > 0 ? (size_t)page : 4096;
    size_t need = LP_LIVE_SEGMENT + payload;
    return (need + p - 1) / p * p;
}

/* Blocks reserved on disk, so a later store into the mapping cannot fault on a full disk where
 * the file system supports it; a plain extension elsewhere. */
static int lp_live_reserve(int fd, off_t off, size_t len)
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

static int lp_live_mine(lp_RecorderObject *rec)
{
    return rec->live_fd >= 0 && rec->live_pid == (long)getpid();
}

/* Records why the live file stopped growing, marks it abandoned for readers, and detaches:
 * later chunks are memory only, and the worker file's snapshots carry them. */
static void lp_live_abandon(lp_RecorderObject *rec, const char *what, int err)
{
    PyErr_Format(PyExc_OSError, "%s: %s; numbers after this point are in the snapshots only", what,
                 strerror(err));
    lp_record_error(rec, "live file");
    if (rec->live_hdr != NULL) {
        __atomic_store_n(&rec->live_hdr->epoch, UINT64_MAX, __ATOMIC_RELEASE);
    }
    lp_live_detach(rec);
}

/* A zeroed chunk of `payload` bytes after a segment header: in the live file when one is
 * attached in this process, else anonymous memory. NULL when out of memory. */
void *lp_chunk_alloc(lp_RecorderObject *rec, int kind, int32_t index, size_t payload)
{
    size_t bytes = lp_seg_bytes(payload);
    char *base = MAP_FAILED;
    if (lp_live_mine(rec)) {
        off_t off = (off_t)rec->live_size;
        if (lp_live_reserve(rec->live_fd, off, bytes) == 0) {
            base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, rec->live_fd, off);
        }
        if (base == MAP_FAILED) {
            lp_live_abandon(rec, "the live file could not grow", errno);
        } else {
            rec->live_size = (int64_t)(off + (off_t)bytes);
        }
    }
    if (base == MAP_FAILED) {
        base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED) {
            return NULL;
        }
    }
    lp_live_segment *seg = (lp_live_segment *)base;
    seg->kind = (uint32_t)kind;
    seg->index = index;
    seg->bytes = (uint32_t)bytes;
    __atomic_store_n(&seg->magic, LP_SEG_MAGIC, __ATOMIC_RELEASE);
    return base + LP_LIVE_SEGMENT;
}

void lp_chunk_free(void *chunk, size_t payload)
{
    if (chunk != NULL) {
        (void)munmap((char *)chunk - LP_LIVE_SEGMENT, lp_seg_bytes(payload));
    }
}

/* A name's UTF-8 bytes, cut at a character boundary to LP_LIVE_NAME. */
void lp_live_set_name(char *dst, uint16_t *len, uint8_t *cut, PyObject *name)
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

/* ===================================================================== attach and detach */

void lp_live_detach(lp_RecorderObject *rec)
{
    if (rec->live_hdr != NULL) {
        (void)munmap(rec->live_hdr, LP_LIVE_HEADER);
        rec->live_hdr = NULL;
    }
    if (rec->live_fd >= 0) {
        (void)close(rec->live_fd);
        rec->live_fd = -1;
    }
    rec->live_size = 0;
}

/* reset(): in a fork child the parent's file is let go untouched; in the process that made
 * it, the file is emptied to its header and the epoch bumped, so a reader starts over. */
void lp_live_before_reset(lp_RecorderObject *rec)
{
    if (rec->live_fd < 0) {
        return;
    }
    if (!lp_live_mine(rec)) {
        rec->chunks_foreign = 1;
        lp_live_detach(rec);
        return;
    }
    __atomic_store_n(&rec->live_hdr->n_nodes, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&rec->live_hdr->n_counters, 0, __ATOMIC_RELEASE);
    __atomic_fetch_add(&rec->live_hdr->epoch, 1, __ATOMIC_RELEASE);
}

void lp_live_after_reset(lp_RecorderObject *rec)
{
    if (lp_live_mine(rec)) {
        if (ftruncate(rec->live_fd, LP_LIVE_HEADER) < 0) {
            lp_live_abandon(rec, "the live file could not be emptied", errno);
            return;
        }
        rec->live_size = LP_LIVE_HEADER;
    }
}

static void lp_live_fill_header(lp_RecorderObject *rec, lp_live_header *h, const char *ident, Py_ssize_t n)
{
    memset(h, 0, sizeof *h);
    h->version = LP_LIVE_VERSION;
    h->header_bytes = LP_LIVE_HEADER;
    h->segment_bytes = LP_LIVE_SEGMENT;
    h->node_bytes = sizeof(lp_node);
    h->counter_bytes = sizeof(lp_counter);
    h->chunk_nodes = LP_NODE_CHUNK;
    h->chunk_counters = LP_COUNTER_CHUNK;
    h->n_buckets = LP_N_BUCKETS;
    h->name_bytes = LP_LIVE_NAME;
    h->measure_cpu = (uint32_t)rec->measure_cpu;
    h->pid = (int64_t)getpid();
    struct timespec ts;
    h->created_unix_ns =
        clock_gettime(CLOCK_REALTIME, &ts) == 0 ? (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec : 0;
    h->off_seq = offsetof(lp_node, seq);
    h->off_id = offsetof(lp_node, id);
    h->off_parent = offsetof(lp_node, parent);
    h->off_entries = offsetof(lp_node, entries);
    h->off_wall = offsetof(lp_node, wall_ns);
    h->off_self = offsetof(lp_node, self_ns);
    h->off_cpu = offsetof(lp_node, cpu_ns);
    h->off_cpu_missing = offsetof(lp_node, cpu_missing);
    h->off_min = offsetof(lp_node, min_ns);
    h->off_max = offsetof(lp_node, max_ns);
    h->off_io = offsetof(lp_node, io);
    h->off_sync = offsetof(lp_node, sync);
    h->off_overflow = offsetof(lp_node, overflow);
    h->off_depth = offsetof(lp_node, depth);
    h->off_io_delta = offsetof(lp_node, io_delta);
    h->off_io_measured = offsetof(lp_node, io_measured);
    h->off_io_failed = offsetof(lp_node, io_failed);
    h->off_hist = offsetof(lp_node, hist);
    h->off_lname_len = offsetof(lp_node, lname_len);
    h->off_lname_cut = offsetof(lp_node, lname_cut);
    h->off_lname = offsetof(lp_node, lname);
    h->coff_node = offsetof(lp_counter, node);
    h->coff_total = offsetof(lp_counter, total);
    h->coff_lname_len = offsetof(lp_counter, lname_len);
    h->coff_lname_cut = offsetof(lp_counter, lname_cut);
    h->coff_lname = offsetof(lp_counter, lname);
    h->identity_len = (uint32_t)n;
    memcpy(h->identity, ident, (size_t)n);
}

/* Copies one chunk into the file at `off` and maps the file over it, at the same address. */
static int lp_live_move_chunk(int fd, void *chunk, size_t payload, off_t off)
{
    char *base = (char *)chunk - LP_LIVE_SEGMENT;
    size_t bytes = lp_seg_bytes(payload);
    if (lp_live_reserve(fd, off, bytes) < 0) {
        return -1;
    }
    size_t done = 0;
    while (done < bytes) {
        ssize_t w = pwrite(fd, base + done, bytes - done, off + (off_t)done);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        done += (size_t)w;
    }
    if (mmap(base, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, off) == MAP_FAILED) {
        return -1;
    }
    return 0;
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
    if (lp_live_mine(self)) {
        PyErr_SetString(PyExc_RuntimeError, "a live file is already attached");
        return NULL;
    }
    lp_live_detach(self); /* a copy of the parent's, in a fork child that has not reset */
    int dfd = fcntl((int)fd, F_DUPFD_CLOEXEC, 0);
    if (dfd < 0) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    lp_live_header *h = MAP_FAILED;
    if (ftruncate(dfd, 0) == 0 && lp_live_reserve(dfd, 0, LP_LIVE_HEADER) == 0) {
        h = mmap(NULL, LP_LIVE_HEADER, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0);
    }
    if (h == MAP_FAILED) {
        int err = errno;
        (void)close(dfd);
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    lp_live_fill_header(self, h, PyBytes_AS_STRING(args[1]), n);
    off_t off = LP_LIVE_HEADER;
    int failed = 0;
    for (int32_t c = 0; c < self->n_chunks && !failed; c++) {
        failed = lp_live_move_chunk(dfd, self->chunks[c], LP_NODE_CHUNK * sizeof(lp_node), off) < 0;
        off += (off_t)lp_seg_bytes(LP_NODE_CHUNK * sizeof(lp_node));
    }
    for (int32_t c = 0; c < self->n_cchunks && !failed; c++) {
        failed = lp_live_move_chunk(dfd, self->cchunks[c], LP_COUNTER_CHUNK * sizeof(lp_counter), off) < 0;
        off += (off_t)lp_seg_bytes(LP_COUNTER_CHUNK * sizeof(lp_counter));
    }
    if (failed) {
        int err = errno;
        h->epoch = UINT64_MAX; /* abandoned: readers ignore the file */
        (void)munmap(h, LP_LIVE_HEADER);
        (void)close(dfd);
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    self->live_fd = dfd;
    self->live_pid = (long)getpid();
    self->live_hdr = h;
    self->live_size = (int64_t)off;
    lp_live_publish(self);
    memcpy(h->magic, "LPLIVE\0\0", 8);
    Py_RETURN_NONE;
}

PyObject *lp_recorder_live_detach(lp_RecorderObject *self, PyObject *Py_UNUSED(ignored))
{
    lp_live_detach(self);
    Py_RETURN_NONE;
}

PyObject *lp_recorder_get_live(lp_RecorderObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(lp_live_mine(self));
}
