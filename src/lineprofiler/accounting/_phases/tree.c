/* The phase tree: nodes in fixed chunks (a node never moves), the (parent, name) -> child hash,
 * the path cap and the lazily built paths. */
#include "phases.h"

#include <stdlib.h>
#include <string.h>

/* ===================================================================== the tree */

/* Returns the new node, or NULL when out of memory (no exception set). */
static lp_node *lp_node_new(lp_RecorderObject *rec, int32_t parent, PyObject *name)
{
    int32_t id = rec->n_nodes;
    if (id / LP_NODE_CHUNK >= rec->n_chunks) {
        if (rec->n_chunks == rec->chunk_cap) {
            int32_t cap = rec->chunk_cap ? rec->chunk_cap * 2 : 16;
            lp_node **chunks = realloc(rec->chunks, (size_t)cap * sizeof *chunks);
            if (chunks == NULL) {
                return NULL;
            }
            rec->chunks = chunks;
            rec->chunk_cap = cap;
        }
        lp_node *chunk = calloc(LP_NODE_CHUNK, sizeof *chunk);
        if (chunk == NULL) {
            return NULL;
        }
        rec->chunks[rec->n_chunks++] = chunk;
        lp_live_chunk_added(rec, LP_SEG_NODES, rec->n_chunks - 1);
    }
    lp_node *node = lp_node_at(rec, id);
    memset(node, 0, sizeof *node);
    node->id = id;
    node->parent = parent;
    node->name = name;
    node->depth = parent >= 0 ? lp_node_at(rec, parent)->depth + 1 : 0;
    node->min_ns = INT64_MAX;
    rec->n_nodes++;
    lp_live_node_added(rec, node);
    return node;
}

static int lp_child_grow(lp_RecorderObject *rec)
{
    uint32_t new_cap = rec->child ? (rec->child_mask + 1) * 2 : 64;
    lp_child_slot *slots = malloc(new_cap * sizeof *slots);
    if (slots == NULL) {
        return -1;
    }
    for (uint32_t i = 0; i < new_cap; i++) {
        slots[i].node = -1;
    }
    if (rec->child) {
        for (uint32_t i = 0; i <= rec->child_mask; i++) {
            lp_child_slot *s = &rec->child[i];
            if (s->node < 0) {
                continue;
            }
            uint32_t j = lp_hash2(s->parent, s->name) & (new_cap - 1);
            while (slots[j].node >= 0) {
                j = (j + 1) & (new_cap - 1);
            }
            slots[j] = *s;
        }
        free(rec->child);
    }
    rec->child = slots;
    rec->child_mask = new_cap - 1;
    return 0;
}

/* The node for `canon` under `parent`, created if new; the overflow node once a cap is hit
 * (max_depth components, or max_paths paths) or memory runs out. Never NULL. */
lp_node *lp_child_lookup(lp_RecorderObject *rec, int32_t parent, PyObject *canon)
{
    if (parent == LP_OVERFLOW) {
        return lp_node_at(rec, LP_OVERFLOW);
    }
    if (rec->child == NULL || (uint32_t)(rec->child_used + 1) * 2 > rec->child_mask + 1) {
        if (lp_child_grow(rec) < 0 && rec->child == NULL) {
            return lp_node_at(rec, LP_OVERFLOW);
        }
    }
    uint32_t j = lp_hash2(parent, canon) & rec->child_mask;
    while (rec->child[j].node >= 0) {
        if (rec->child[j].parent == parent && rec->child[j].name == canon) {
            return lp_node_at(rec, rec->child[j].node);
        }
        j = (j + 1) & rec->child_mask;
    }
    /* A recursion inside a phase would otherwise make one path per level, each as long as its
     * depth: quadratic in size. */
    if (lp_node_at(rec, parent)->depth >= rec->max_depth) {
        return lp_node_at(rec, LP_OVERFLOW);
    }
    /* the cap counts real paths: root and overflow are not paths */
    if (rec->n_nodes - 2 >= rec->max_paths || (uint32_t)(rec->child_used + 1) * 2 > rec->child_mask + 1) {
        return lp_node_at(rec, LP_OVERFLOW);
    }
    lp_node *node = lp_node_new(rec, parent, canon);
    if (node == NULL) {
        return lp_node_at(rec, LP_OVERFLOW);
    }
    rec->child[j].parent = parent;
    rec->child[j].name = canon;
    rec->child[j].node = node->id;
    rec->child_used++;
    return node;
}

/* Frees the tree and the counters (lp_tree_init makes root and overflow again). */
void lp_tree_free(lp_RecorderObject *rec)
{
    for (int32_t c = 0; c < rec->n_chunks; c++) {
        lp_node *chunk = rec->chunks[c];
        for (int32_t i = 0; i < LP_NODE_CHUNK; i++) {
            int32_t id = c * LP_NODE_CHUNK + i;
            if (id < rec->n_nodes) {
                Py_CLEAR(chunk[i].path); /* private memory: in a fork child, the child's own copy */
            }
        }
        free(chunk);
    }
    free(rec->chunks);
    rec->chunks = NULL;
    rec->n_chunks = rec->chunk_cap = rec->n_nodes = 0;
    free(rec->child);
    rec->child = NULL;
    rec->child_mask = 0;
    rec->child_used = 0;
    for (int32_t c = 0; c < rec->n_cchunks; c++) {
        free(rec->cchunks[c]);
    }
    free(rec->cchunks);
    rec->cchunks = NULL;
    rec->n_cchunks = rec->cchunk_cap = rec->n_counters = 0;
    free(rec->counter_slots);
    rec->counter_slots = NULL;
    rec->counter_mask = 0;
}

int lp_tree_init(lp_RecorderObject *rec)
{
    lp_node *root = lp_node_new(rec, -1, NULL);
    lp_node *over = root ? lp_node_new(rec, LP_ROOT, rec->st->overflow_name) : NULL;
    if (over == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    over->overflow = 1;
    lp_live_node_sync(over);
    return 0;
}

/* ===================================================================== paths */

/* The node's path ("a/b/c"), built once and cached on the node. Borrowed; NULL with an
 * exception on memory failure. Parents always have smaller ids, so building in id order never
 * recurses; path_of may ask for any id, hence the walk up. */
PyObject *lp_node_path(lp_RecorderObject *rec, int32_t id)
{
    lp_node *node = lp_node_at(rec, id);
    if (node->path != NULL) {
        return node->path;
    }
    if (node->parent <= LP_ROOT || id == LP_OVERFLOW) {
        node->path = Py_NewRef(node->name);
        return node->path;
    }
    /* walk up to the nearest ancestor with a path, then build downwards */
    int32_t chain[256];
    int n = 0;
    int32_t cur = id;
    while (cur > LP_ROOT && lp_node_at(rec, cur)->path == NULL && n < 256) {
        chain[n++] = cur;
        cur = lp_node_at(rec, cur)->parent;
    }
    if (n == 256 && cur > LP_ROOT && lp_node_at(rec, cur)->path == NULL) {
        /* deeper than the chain: build the upper part first */
        if (lp_node_path(rec, cur) == NULL) {
            return NULL;
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        lp_node *x = lp_node_at(rec, chain[i]);
        if (x->parent <= LP_ROOT) {
            x->path = Py_NewRef(x->name);
        } else {
            x->path = PyUnicode_FromFormat("%U/%U", lp_node_at(rec, x->parent)->path, x->name);
            if (x->path == NULL) {
                return NULL;
            }
        }
    }
    return node->path;
}
