/* The caching allocator's common malloc and free (allocator.py's CachingAllocator.malloc / free / _merge) in C:
 * the same steps on the same Python objects (Block and _Pool slots, the sorted free lists of (size, ptr, block)
 * tuples, the packed stat vectors), so the policy, the addresses and the stats are exactly the Python code's.
 *
 * malloc(alloc, nbytes) -> Block, or None: the caller runs the Python method instead (a size not yet in
 * alloc._classes, a graph pool, blocks waiting on streams, a re-entrant call, release_on_free ...).
 * free(alloc, block) -> True, or False: likewise.  Called with the GIL held from the Python methods' first line.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

static PyTypeObject *BlockType, *PoolType, *AllocType;
static Py_ssize_t A_pending, A_busy, A_lock, A_deferred, A_after, A_classes, A_all, A_used_on, A_release;
static Py_ssize_t B_ptr, B_size, B_pool, B_prev, B_next, B_active;     /* slot offsets */
static Py_ssize_t P_free, P_split_from, P_room, P_increases, P_allocator;
static PyObject *C_W, *C_SPLIT, *C_SPLIT_BYTES, *C_INACTIVE_SPLIT, *C_GUARDS, *ZERO;
static PyObject *S_new_peaks, *S_new_segment, *S_acquire, *S_release_m, *S_free, *S_malloc, *S_pop;

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))
/* an allocator's slot, as a new reference (AttributeError if unset, as Python's getattr) */
static PyObject *aget(PyObject *a, Py_ssize_t off, const char *name) {
    PyObject *v = SLOT(a, off);
    if (v == NULL) { PyErr_Format(PyExc_AttributeError, "allocator has no attribute '%s'", name); return NULL; }
    return Py_NewRef(v);
}
#define AGET(a, name) aget(a, A_##name, #name)

static inline void set_slot(PyObject *o, Py_ssize_t off, PyObject *v) {
    PyObject *old = SLOT(o, off);
    Py_INCREF(v);
    SLOT(o, off) = v;
    Py_XDECREF(old);
}

static inline long long as_ll(PyObject *o) { return PyLong_AsLongLong(o); }

static int slot_offset(PyTypeObject *tp, const char *name, Py_ssize_t *off) {
    PyObject *d = PyDict_GetItemString(tp->tp_dict, name);
    if (d == NULL || Py_TYPE(d) != &PyMemberDescr_Type) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", tp->tp_name, name);
        return -1;
    }
    *off = ((PyMemberDescrObject *)d)->d_member->offset;
    return 0;
}

/* first i with (e.size, e.ptr) >= (s, p) (p < 0: first i with e.size >= s), as bisect_left; upper: > (insort) */
static Py_ssize_t search(PyObject *free, long long s, long long p, int upper) {
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(free);
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        PyObject *e = PyList_GET_ITEM(free, mid);
        long long es = as_ll(PyTuple_GET_ITEM(e, 0));
        int less;
        if (es != s || p < 0)
            less = es < s;
        else {
            long long ep = as_ll(PyTuple_GET_ITEM(e, 1));
            less = upper ? ep <= p : ep < p;
        }
        if (less) lo = mid + 1; else hi = mid;
    }
    return lo;
}

static inline int entry_less(PyObject *e, long long s, long long p) {     /* e < (s, p, ...) */
    long long es = as_ll(PyTuple_GET_ITEM(e, 0));
    return es < s || (es == s && as_ll(PyTuple_GET_ITEM(e, 1)) < p);
}

static PyObject *entry_of(PyObject *block) {
    return PyTuple_Pack(3, SLOT(block, B_size), SLOT(block, B_ptr), block);
}

static inline int is_active(PyObject *b) {      /* b.active != 0 (an int: truth cannot fail) */
    return PyObject_IsTrue(SLOT(b, B_active)) == 1;
}

/* allocator.py's _merge(block): 0 or -1 */
static int merge(PyObject *alloc, PyObject *block) {
    set_slot(alloc, A_pending, Py_None);
    PyObject *free = SLOT(SLOT(block, B_pool), P_free);
    PyObject *prev = SLOT(block, B_prev), *nxt = SLOT(block, B_next);
    Py_ssize_t i = -1;
    Py_INCREF(block);
    if (prev != Py_None && !is_active(prev)) {
        i = search(free, as_ll(SLOT(prev, B_size)), as_ll(SLOT(prev, B_ptr)), 0);
        PyObject *sz = PyLong_FromLongLong(as_ll(SLOT(prev, B_size)) + as_ll(SLOT(block, B_size)));
        if (sz == NULL) { Py_DECREF(block); return -1; }
        set_slot(prev, B_size, sz);
        Py_DECREF(sz);
        set_slot(prev, B_next, nxt);
        if (nxt != Py_None) set_slot(nxt, B_prev, prev);
        Py_INCREF(prev);
        Py_SETREF(block, prev);
    }
    if (nxt != Py_None && !is_active(nxt)) {
        Py_ssize_t j = search(free, as_ll(SLOT(nxt, B_size)), as_ll(SLOT(nxt, B_ptr)), 0);
        Py_INCREF(nxt);
        if (i >= 0) {
            if (PyList_SetSlice(free, j, j + 1, NULL) < 0) { Py_DECREF(nxt); Py_DECREF(block); return -1; }
            i -= j < i;
        } else
            i = j;
        PyObject *sz = PyLong_FromLongLong(as_ll(SLOT(block, B_size)) + as_ll(SLOT(nxt, B_size)));
        if (sz == NULL) { Py_DECREF(nxt); Py_DECREF(block); return -1; }
        set_slot(block, B_size, sz);
        Py_DECREF(sz);
        PyObject *after = SLOT(nxt, B_next);
        set_slot(block, B_next, after);
        if (after != Py_None) set_slot(after, B_prev, block);
        Py_DECREF(nxt);
    }
    long long s = as_ll(SLOT(block, B_size)), p = as_ll(SLOT(block, B_ptr));
    PyObject *entry = entry_of(block);
    Py_DECREF(block);
    if (entry == NULL) return -1;
    Py_ssize_t n = PyList_GET_SIZE(free);
    int rc;
    if (i >= 0 && (i + 1 == n || !entry_less(PyList_GET_ITEM(free, i + 1), s, p) /* entry < free[i+1] */)
            && (i == 0 || entry_less(PyList_GET_ITEM(free, i - 1), s, p))) {
        rc = PyList_SetItem(free, i, entry);     /* steals entry */
        return rc;
    }
    if (i >= 0 && PyList_SetSlice(free, i, i + 1, NULL) < 0) { Py_DECREF(entry); return -1; }
    rc = PyList_Insert(free, search(free, s, p, 1), entry);
    Py_DECREF(entry);
    return rc;
}

static int enter(PyObject *alloc, PyObject **lock) {   /* 1: entered, 0: busy (lock released), -1: error */
    *lock = AGET(alloc, lock);
    if (*lock == NULL) return -1;
    PyObject *r = PyObject_CallMethodNoArgs(*lock, S_acquire);
    if (r == NULL) { Py_CLEAR(*lock); return -1; }
    Py_DECREF(r);
    PyObject *busy = AGET(alloc, busy);
    int b = busy == NULL ? -1 : PyObject_IsTrue(busy);
    Py_XDECREF(busy);
    if (b != 0) {
        r = PyObject_CallMethodNoArgs(*lock, S_release_m);
        Py_XDECREF(r);
        Py_CLEAR(*lock);
        return b < 0 || r == NULL ? -1 : 0;
    }
    if ((set_slot(alloc, A_busy, Py_True), 0)) {
        r = PyObject_CallMethodNoArgs(*lock, S_release_m);
        Py_XDECREF(r);
        Py_CLEAR(*lock);
        return -1;
    }
    return 1;
}

/* _leave(): busy off, lock released, deferred frees done; keeps a pending exception of the body */
static int leave(PyObject *alloc, PyObject *lock) {
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    set_slot(alloc, A_busy, Py_False);
    int ok = 1;
    PyObject *r = PyObject_CallMethodNoArgs(lock, S_release_m);
    ok = ok && r != NULL;
    Py_XDECREF(r);
    Py_DECREF(lock);
    PyObject *deferred = ok ? AGET(alloc, deferred) : NULL;
    while (deferred != NULL && PyList_GET_SIZE(deferred) > 0) {
        PyObject *b = PyObject_CallMethodNoArgs(deferred, S_pop);
        r = b == NULL ? NULL : PyObject_CallMethodOneArg(alloc, S_free, b);
        Py_XDECREF(b);
        if (r == NULL) { ok = 0; break; }
        Py_DECREF(r);
    }
    Py_XDECREF(deferred);
    if (et != NULL) {       /* the body's exception wins (as a finally clause that does not raise) */
        if (!ok) PyErr_Clear();
        PyErr_Restore(et, ev, tb);
        return -1;
    }
    return ok ? 0 : -1;
}

/* pool.room -= change; all.room -= change; pool.increases += inc (if inc); new peaks if a guard bit dropped */
static int count(PyObject *alloc, PyObject *pool, PyObject *change, PyObject *inc, int check_always) {
    PyObject *all = AGET(alloc, all);
    if (all == NULL) return -1;
    PyObject *room = PyNumber_Subtract(SLOT(pool, P_room), change);
    PyObject *all_room = room ? PyNumber_Subtract(SLOT(all, P_room), change) : NULL;
    int rc = -1;
    if (all_room == NULL) goto done;
    set_slot(pool, P_room, room);
    set_slot(all, P_room, all_room);
    int nonzero = PyObject_IsTrue(inc);
    if (nonzero < 0) goto done;
    if (nonzero) {
        PyObject *s = PyNumber_Add(SLOT(pool, P_increases), inc);
        if (s == NULL) goto done;
        set_slot(pool, P_increases, s);
        Py_DECREF(s);
    }
    if (nonzero || check_always) {
        PyObject *a = PyNumber_And(room, all_room), *g = a ? PyNumber_And(a, C_GUARDS) : NULL;
        Py_XDECREF(a);
        if (g == NULL) goto done;
        int eq = PyObject_RichCompareBool(g, C_GUARDS, Py_EQ);
        Py_DECREF(g);
        if (eq < 0) goto done;
        if (!eq) {
            PyObject *r = PyObject_CallMethodNoArgs(alloc, S_new_peaks);
            if (r == NULL) goto done;
            Py_DECREF(r);
        }
    }
    rc = 0;
done:
    Py_DECREF(all);
    Py_XDECREF(room);
    Py_XDECREF(all_room);
    return rc;
}

static PyObject *shifted(long long v, PyObject *by) {      /* v << by */
    PyObject *x = PyLong_FromLongLong(v);
    if (x == NULL) return NULL;
    PyObject *r = PyNumber_Lshift(x, by);
    Py_DECREF(x);
    return r;
}

static PyObject *malloc_body(PyObject *alloc, PyObject *pool, long long size, PyObject *active) {
    PyObject *free = SLOT(pool, P_free);
    long long split_from = as_ll(SLOT(pool, P_split_from));
    PyObject *block = AGET(alloc, pending);      /* new reference */
    PyObject *nxt = NULL, *split = NULL, *increase = NULL;
    int reuse = 0;
    long long msize = 0;
    Py_ssize_t i = -1;
    if (block == NULL) return NULL;
    if (block != Py_None) {
        set_slot(alloc, A_pending, Py_None);
        nxt = SLOT(block, B_next);
        int nf = nxt != Py_None && !is_active(nxt);
        long long bsize = as_ll(SLOT(block, B_size));
        msize = nf ? bsize + as_ll(SLOT(nxt, B_size)) : bsize;
        PyObject *prev = SLOT(block, B_prev);
        reuse = bsize == size && SLOT(block, B_pool) == pool && (prev == Py_None || is_active(prev))
                && (!nf || as_ll(SLOT(nxt, B_size)) >= split_from);
        if (reuse) {
            i = search(free, size, -1, 0);
            Py_ssize_t n = PyList_GET_SIZE(free);
            if (nf && i < n && PyTuple_GET_ITEM(PyList_GET_ITEM(free, i), 2) == nxt) i++;
            if (i < n) {
                PyObject *e = PyList_GET_ITEM(free, i);
                long long es = as_ll(PyTuple_GET_ITEM(e, 0));
                reuse = es > msize || (es == msize && as_ll(PyTuple_GET_ITEM(e, 1)) > as_ll(SLOT(block, B_ptr)));
            }
        }
        if (reuse)
            nxt = nf ? SLOT(nxt, B_next) : nxt;
        else if (merge(alloc, block) < 0)
            goto fail;
    }
    if (block == Py_None || !reuse) {
        Py_DECREF(block);
        i = search(free, size, -1, 0);
        if (i < PyList_GET_SIZE(free)) {
            block = PyTuple_GET_ITEM(PyList_GET_ITEM(free, i), 2);
            Py_INCREF(block);
        } else {
            i = -1;
            PyObject *s = PyLong_FromLongLong(size);
            block = s ? PyObject_CallMethodObjArgs(alloc, S_new_segment, pool, s, NULL) : NULL;
            Py_XDECREF(s);
            if (block == NULL) return NULL;
        }
        reuse = 0;
        msize = as_ll(SLOT(block, B_size));
        nxt = SLOT(block, B_next);
    }
    Py_INCREF(nxt);
    long long rest = msize - size;
    int was_split = SLOT(block, B_prev) != Py_None || nxt != Py_None;
    if (rest < split_from && !reuse && i >= 0 && PyList_SetSlice(free, i, i + 1, NULL) < 0) goto fail_nxt;
    if (rest >= split_from) {
        if (!reuse) {
            long long bptr = as_ll(SLOT(block, B_ptr));
            PyObject *tail = BlockType->tp_alloc(BlockType, 0);
            PyObject *tp = PyLong_FromLongLong(bptr + size), *tr = PyLong_FromLongLong(rest),
                     *sz = PyLong_FromLongLong(size);
            if (tail == NULL || tp == NULL || tr == NULL || sz == NULL) {
                Py_XDECREF(tail); Py_XDECREF(tp); Py_XDECREF(tr); Py_XDECREF(sz);
                goto fail_nxt;
            }
            set_slot(tail, B_ptr, tp);
            set_slot(tail, B_size, tr);
            set_slot(tail, B_pool, pool);
            set_slot(tail, B_prev, block);
            set_slot(tail, B_next, nxt);
            set_slot(tail, B_active, ZERO);
            Py_DECREF(tp); Py_DECREF(tr);
            if (nxt != Py_None) set_slot(nxt, B_prev, tail);
            set_slot(block, B_next, tail);
            set_slot(block, B_size, sz);
            Py_DECREF(sz);
            PyObject *entry = entry_of(tail);
            Py_DECREF(tail);
            if (entry == NULL) goto fail_nxt;
            int rc;
            if ((i > 0 && entry_less(PyList_GET_ITEM(free, i - 1), rest, bptr + size)) || i == 0) {
                rc = PyList_SetItem(free, i, entry);
            } else {
                rc = i > 0 ? PyList_SetSlice(free, i, i + 1, NULL) : 0;
                if (rc == 0) rc = PyList_Insert(free, search(free, rest, bptr + size, 1), entry);
                Py_DECREF(entry);
            }
            if (rc < 0) goto fail_nxt;
        }
        if (was_split) {
            PyObject *x = shifted(size, C_SPLIT_BYTES);
            split = x ? PyNumber_Negative(x) : NULL;
            Py_XDECREF(x);
            increase = ZERO; Py_INCREF(ZERO);
        } else {
            PyObject *x = shifted(rest, C_SPLIT_BYTES);
            split = x ? PyNumber_Add(C_INACTIVE_SPLIT, x) : NULL;
            Py_XDECREF(x);
            increase = split; Py_XINCREF(split);
        }
    } else if (was_split) {
        PyObject *x = shifted(as_ll(SLOT(block, B_size)), C_SPLIT_BYTES);
        PyObject *y = x ? PyNumber_Add(C_INACTIVE_SPLIT, x) : NULL;
        split = y ? PyNumber_Negative(y) : NULL;
        Py_XDECREF(x); Py_XDECREF(y);
        increase = ZERO; Py_INCREF(ZERO);
    } else {
        split = ZERO; Py_INCREF(ZERO);
        increase = ZERO; Py_INCREF(ZERO);
    }
    Py_DECREF(nxt);
    nxt = NULL;
    if (split == NULL) goto fail_inc;
    long long bsize = as_ll(SLOT(block, B_size));
    Py_INCREF(active);
    if (bsize != size) {
        PyObject *x = shifted(bsize - size, C_W);
        PyObject *a = x ? PyNumber_Add(active, x) : NULL;
        Py_XDECREF(x);
        Py_SETREF(active, a);
        if (active == NULL) goto fail_inc;
    }
    set_slot(block, B_active, active);
    PyObject *change = PyNumber_Add(active, split);
    PyObject *inc = PyNumber_Add(active, increase);
    Py_DECREF(active);
    int rc = change && inc ? count(alloc, pool, change, inc, 1) : -1;
    Py_XDECREF(change); Py_XDECREF(inc);
    Py_DECREF(split); Py_DECREF(increase);
    if (rc < 0) { Py_DECREF(block); return NULL; }
    return block;
fail_nxt:
    Py_XDECREF(nxt);
fail_inc:
    Py_XDECREF(split);
    Py_XDECREF(increase);
fail:
    Py_DECREF(block);
    return NULL;
}

/* 1 when ``name`` is set on the instance (tgrad.compile's recorder wraps malloc / free so): the caller then
 * calls alloc.<name>(...) */
static int overridden(PyObject *alloc, PyObject *name) {
    PyObject **dp = _PyObject_GetDictPtr(alloc);
    if (dp == NULL || *dp == NULL) return 0;
    PyObject *v = PyDict_GetItemWithError(*dp, name);
    return v != NULL ? 1 : PyErr_Occurred() ? -1 : 0;
}

static PyObject *py_malloc(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) { PyErr_SetString(PyExc_TypeError, "malloc(alloc, nbytes)"); return NULL; }
    PyObject *alloc = args[0], *nbytes = args[1];
    if (!PyObject_TypeCheck(alloc, AllocType)) Py_RETURN_NONE;
    int o = overridden(alloc, S_malloc);
    if (o < 0) return NULL;
    if (o) Py_RETURN_NONE;
    PyObject *after = AGET(alloc, after);
    if (after == NULL) return NULL;
    int pending_streams = PyObject_IsTrue(after);
    Py_DECREF(after);
    if (pending_streams) Py_RETURN_NONE;
    PyObject *classes = AGET(alloc, classes);
    if (classes == NULL) return NULL;
    PyObject *cls = PyLong_CheckExact(nbytes) ? PyDict_GetItemWithError(classes, nbytes) : NULL;
    Py_XINCREF(cls);     /* (size, key, pool, active) */
    Py_DECREF(classes);
    if (cls == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    PyObject *pool = PyTuple_GET_ITEM(cls, 2);
    if (Py_TYPE(pool) != PoolType) { Py_DECREF(cls); Py_RETURN_NONE; }
    PyObject *lock;
    int e = enter(alloc, &lock);
    if (e <= 0) {
        Py_DECREF(cls);
        if (e < 0) return NULL;
        Py_RETURN_NONE;     /* re-entrant: the Python method raises */
    }
    PyObject *block = NULL;
    PyObject *pending = AGET(alloc, pending);
    if (pending != NULL && (pending == Py_None || Py_TYPE(SLOT(pending, B_pool)) == PoolType))
        block = malloc_body(alloc, pool, as_ll(PyTuple_GET_ITEM(cls, 0)), PyTuple_GET_ITEM(cls, 3));
    else if (pending != NULL)
        block = Py_NewRef(Py_None);     /* a graph pool's block is pending: the Python method */
    Py_XDECREF(pending);
    Py_DECREF(cls);
    if (leave(alloc, lock) < 0) { Py_XDECREF(block); return NULL; }
    return block;
}

static int free_body(PyObject *alloc, PyObject *block, PyObject *pending) {
    if (pending != Py_None && merge(alloc, pending) < 0) return -1;
    PyObject *pool = SLOT(block, B_pool);
    long long size = as_ll(SLOT(block, B_size));
    PyObject *active = SLOT(block, B_active);
    Py_INCREF(active);
    set_slot(block, B_active, ZERO);
    PyObject *prev = SLOT(block, B_prev), *nxt = SLOT(block, B_next);
    long long merged = 0, msize = size;
    if (prev != Py_None && !is_active(prev)) { merged = 1; msize += as_ll(SLOT(prev, B_size)); prev = SLOT(prev, B_prev); }
    if (nxt != Py_None && !is_active(nxt)) { merged += 1; msize += as_ll(SLOT(nxt, B_size)); nxt = SLOT(nxt, B_next); }
    PyObject *change = NULL, *increase = NULL;
    if (prev != Py_None || nxt != Py_None) {
        PyObject *sb = shifted(size, C_SPLIT_BYTES), *a = shifted(1 - merged, C_SPLIT);
        PyObject *b = sb && a ? PyNumber_Add(a, sb) : NULL;
        change = b ? PyNumber_Subtract(b, active) : NULL;
        if (sb) increase = merged ? (Py_INCREF(sb), sb) : PyNumber_Add(C_INACTIVE_SPLIT, sb);
        Py_XDECREF(sb); Py_XDECREF(a); Py_XDECREF(b);
    } else {
        PyObject *a = shifted(-merged, C_SPLIT), *b = shifted(msize - size, C_SPLIT_BYTES);
        PyObject *c = a && b ? PyNumber_Subtract(a, b) : NULL;
        change = c ? PyNumber_Subtract(c, active) : NULL;
        Py_XDECREF(a); Py_XDECREF(b); Py_XDECREF(c);
        increase = ZERO; Py_INCREF(ZERO);
    }
    Py_DECREF(active);
    int rc = change && increase ? count(alloc, pool, change, increase, 0) : -1;
    Py_XDECREF(change); Py_XDECREF(increase);
    if (rc < 0) return -1;
    set_slot(alloc, A_pending, block);
    return 0;
}

static PyObject *py_free(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) { PyErr_SetString(PyExc_TypeError, "free(alloc, block)"); return NULL; }
    PyObject *alloc = args[0], *block = args[1];
    if (!PyObject_TypeCheck(alloc, AllocType)) Py_RETURN_FALSE;
    int o = overridden(alloc, S_free);
    if (o < 0) return NULL;
    if (o) Py_RETURN_FALSE;
    if (Py_TYPE(block) != BlockType || Py_TYPE(SLOT(block, B_pool)) != PoolType || !is_active(block)
            || SLOT(SLOT(block, B_pool), P_allocator) != alloc)
        Py_RETURN_FALSE;    /* a graph pool's block, or a double free (the Python method raises) */
    PyObject *used = AGET(alloc, used_on), *rel = used ? AGET(alloc, release) : NULL;
    int u = used ? PyObject_IsTrue(used) : -1, r = rel ? PyObject_IsTrue(rel) : -1;
    Py_XDECREF(used); Py_XDECREF(rel);
    if (u < 0 || r < 0) return NULL;
    if (u || r) Py_RETURN_FALSE;
    PyObject *lock;
    int e = enter(alloc, &lock);
    if (e < 0) return NULL;
    if (e == 0) Py_RETURN_FALSE;    /* re-entrant: the Python method defers it */
    PyObject *pending = AGET(alloc, pending);
    int rc = -1, done = 0;
    if (pending != NULL && (pending == Py_None || Py_TYPE(SLOT(pending, B_pool)) == PoolType)) {
        rc = free_body(alloc, block, pending);
        done = 1;
    } else if (pending != NULL)
        rc = 0;     /* a graph pool's block is pending: the Python method */
    Py_XDECREF(pending);
    if (leave(alloc, lock) < 0 || rc < 0) return NULL;
    return PyBool_FromLong(done);
}

static PyObject *py_setup(PyObject *self, PyObject *args) {
    PyObject *bt, *pt, *at, *w, *split, *split_bytes, *inactive, *guards;
    if (!PyArg_ParseTuple(args, "O!O!O!OOOOO", &PyType_Type, &bt, &PyType_Type, &pt, &PyType_Type, &at, &w, &split,
                          &split_bytes, &inactive, &guards))
        return NULL;
    BlockType = (PyTypeObject *)bt;
    PoolType = (PyTypeObject *)pt;
    AllocType = (PyTypeObject *)at;
    Py_INCREF(bt); Py_INCREF(pt); Py_INCREF(at);
    if (slot_offset(AllocType, "_pending", &A_pending) || slot_offset(AllocType, "_busy", &A_busy)
            || slot_offset(AllocType, "_lock", &A_lock) || slot_offset(AllocType, "_deferred", &A_deferred)
            || slot_offset(AllocType, "_after_streams", &A_after) || slot_offset(AllocType, "_classes", &A_classes)
            || slot_offset(AllocType, "_all", &A_all) || slot_offset(AllocType, "_used_on", &A_used_on)
            || slot_offset(AllocType, "release_on_free", &A_release))
        return NULL;
    if (slot_offset(BlockType, "ptr", &B_ptr) || slot_offset(BlockType, "size", &B_size)
            || slot_offset(BlockType, "pool", &B_pool) || slot_offset(BlockType, "prev", &B_prev)
            || slot_offset(BlockType, "next", &B_next) || slot_offset(BlockType, "active", &B_active)
            || slot_offset(PoolType, "free", &P_free) || slot_offset(PoolType, "split_from", &P_split_from)
            || slot_offset(PoolType, "room", &P_room) || slot_offset(PoolType, "increases", &P_increases)
            || slot_offset(PoolType, "allocator", &P_allocator))
        return NULL;
    C_W = Py_NewRef(w); C_SPLIT = Py_NewRef(split); C_SPLIT_BYTES = Py_NewRef(split_bytes);
    C_INACTIVE_SPLIT = Py_NewRef(inactive); C_GUARDS = Py_NewRef(guards);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", py_setup, METH_VARARGS, "setup(Block, _Pool, CachingAllocator, _W, _SPLIT, _SPLIT_BYTES, INACTIVE_SPLIT, _GUARDS)"},
    {"malloc", (PyCFunction)(void (*)(void))py_malloc, METH_FASTCALL, "malloc(alloc, nbytes) -> Block or None"},
    {"free", (PyCFunction)(void (*)(void))py_free, METH_FASTCALL, "free(alloc, block) -> True, or False"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tgrad_allocator", NULL, -1, methods};

PyMODINIT_FUNC PyInit__tgrad_allocator(void) {
#define INTERN(var, s) if ((var = PyUnicode_InternFromString(s)) == NULL) return NULL
    INTERN(S_new_peaks, "_new_peaks"); INTERN(S_new_segment, "_new_segment"); INTERN(S_acquire, "acquire");
    INTERN(S_release_m, "release"); INTERN(S_free, "free"); INTERN(S_malloc, "malloc"); INTERN(S_pop, "pop");
    ZERO = PyLong_FromLong(0);
    return PyModule_Create(&module);
}
