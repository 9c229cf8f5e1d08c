"""Host selection in ATen's cpu order, for the rows where tied elements make the order matter.

ATen's cpu ``sort`` (stable=False) and ``mode`` run libstdc++'s ``std::sort``, ``topk`` (``topk_impl_loop``)
``std::partial_sort`` (k * 64 <= n) or ``std::nth_element`` then ``std::sort`` of the first k - 1 over (value,
index) pairs; ``kthvalue`` runs TH's Sedgewick quick select (``quick_select_template``).  None is stable, so which of equal elements they return,
and in what order, is theirs alone: the functions below are those algorithms step for step (libstdc++'s
``stl_algo.h`` / ``stl_heap.h``), on a Python list with a less-than ``comp``.  Rows without ties get the same
answer from the stable sort kernel (kernels/sort.py), so only tied rows come here.
"""
import math


def _lg(n):
    return n.bit_length() - 1


def _swap(a, i, j):
    a[i], a[j] = a[j], a[i]


def _move_median_to_first(a, result, x, y, z, comp):
    if comp(a[x], a[y]):
        if comp(a[y], a[z]):
            _swap(a, result, y)
        elif comp(a[x], a[z]):
            _swap(a, result, z)
        else:
            _swap(a, result, x)
    elif comp(a[x], a[z]):
        _swap(a, result, x)
    elif comp(a[y], a[z]):
        _swap(a, result, z)
    else:
        _swap(a, result, y)


def _unguarded_partition(a, first, last, pivot, comp):
    while True:
        while comp(a[first], a[pivot]):
            first += 1
        last -= 1
        while comp(a[pivot], a[last]):
            last -= 1
        if not first < last:
            return first
        _swap(a, first, last)
        first += 1


def _partition_pivot(a, first, last, comp):
    mid = first + (last - first) // 2
    _move_median_to_first(a, first, first + 1, mid, last - 1, comp)
    return _unguarded_partition(a, first + 1, last, first, comp)


def _linear_insert(a, last, comp):
    val = a[last]
    nxt = last - 1
    while comp(val, a[nxt]):
        a[last] = a[nxt]
        last = nxt
        nxt -= 1
    a[last] = val


def _insertion_sort(a, first, last, comp):
    if first == last:
        return
    for i in range(first + 1, last):
        if comp(a[i], a[first]):
            val = a[i]
            a[first + 1:i + 1] = a[first:i]
            a[first] = val
        else:
            _linear_insert(a, i, comp)


def _push_heap(a, first, hole, top, value, comp):
    parent = (hole - 1) // 2
    while hole > top and comp(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value


def _adjust_heap(a, first, hole, n, value, comp):
    top = hole
    child = hole
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if comp(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if n % 2 == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    _push_heap(a, first, hole, top, value, comp)


def _make_heap(a, first, last, comp):
    n = last - first
    if n < 2:
        return
    parent = (n - 2) // 2
    while True:
        _adjust_heap(a, first, parent, n, a[first + parent], comp)
        if parent == 0:
            return
        parent -= 1


def _pop_heap(a, first, last, result, comp):
    value = a[result]
    a[result] = a[first]
    _adjust_heap(a, first, 0, last - first, value, comp)


def _heap_select(a, first, middle, last, comp):
    _make_heap(a, first, middle, comp)
    for i in range(middle, last):
        if comp(a[i], a[first]):
            _pop_heap(a, first, middle, i, comp)


def _sort_heap(a, first, last, comp):
    while last - first > 1:
        last -= 1
        _pop_heap(a, first, last, last, comp)


def partial_sort(a, first, middle, last, comp):
    _heap_select(a, first, middle, last, comp)
    _sort_heap(a, first, middle, comp)


def nth_element(a, first, nth, last, comp):
    if first == last or nth == last:
        return
    depth = _lg(last - first) * 2
    while last - first > 3:
        if depth == 0:
            _heap_select(a, first, nth + 1, last, comp)
            _swap(a, first, nth)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, comp)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(a, first, last, comp)


def _introsort_loop(a, first, last, depth, comp):
    while last - first > 16:
        if depth == 0:
            partial_sort(a, first, last, last, comp)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, comp)
        _introsort_loop(a, cut, last, depth, comp)
        last = cut


def stl_sort(a, first, last, comp):
    if first == last:
        return
    _introsort_loop(a, first, last, _lg(last - first) * 2, comp)
    if last - first > 16:
        _insertion_sort(a, first, first + 16, comp)
        for i in range(first + 16, last):
            _linear_insert(a, i, comp)
    else:
        _insertion_sort(a, first, last, comp)


def _rank_before(largest):
    """ATen's comparator: NaN ranks first when largest (last otherwise)."""
    if largest:
        return lambda x, y: (math.isnan(x) and not math.isnan(y)) or x > y
    return lambda x, y: (not math.isnan(x) and math.isnan(y)) or x < y


def topk_row(row, k, largest, sorted):
    """Indices of ATen's topk of the Python list ``row`` (k > 0)."""
    n = len(row)
    before = _rank_before(largest)
    q = [(v, j) for j, v in enumerate(row)]
    comp = lambda x, y: before(x[0], y[0])          # noqa: E731
    if k * 64 <= n:
        partial_sort(q, 0, k, n, comp)
    else:
        nth_element(q, 0, k - 1, n, comp)
        if sorted:
            stl_sort(q, 0, k - 1, comp)
    return [j for _, j in q[:k]]


def sort_row(row, descending):
    """Indices of ATen's cpu sort (stable=False: ``std::sort`` of (value, index) pairs) of the Python list ``row``."""
    before = _rank_before(descending)
    q = [(v, j) for j, v in enumerate(row)]
    stl_sort(q, 0, len(q), lambda x, y: before(x[0], y[0]))
    return [j for _, j in q]


def mode_row(row):
    """Index of ATen's cpu mode of the Python list ``row`` (mode_kernel_impl): (value, index) pairs ``std::sort``-ed
    by value with ``<``, then the last pair of the first run (equal neighbours, so each NaN is a run of its own)
    longer than all runs before it."""
    q = [(v, j) for j, v in enumerate(row)]
    stl_sort(q, 0, len(q), lambda x, y: x[0] < y[0])
    best, run, at = 0, 0, 0
    for i, (v, j) in enumerate(q):
        run += 1
        if i == len(q) - 1 or v != q[i + 1][0]:
            if run > best:
                best, at = run, j
            run = 0
    return at


def kthvalue_row(row, k):
    """Index ATen's kthvalue picks (quick_select_template, k counted from 0) in the Python list ``row``."""
    gt = _rank_before(True)
    arr, idx = list(row), list(range(len(row)))

    def sw(i, j):
        arr[i], arr[j] = arr[j], arr[i]
        idx[i], idx[j] = idx[j], idx[i]
    L, R = 0, len(arr) - 1
    while R > L:
        if R == L + 1:
            if gt(arr[L], arr[R]):
                sw(L, R)
            break
        sw((L + R) >> 1, L + 1)
        if gt(arr[L + 1], arr[R]):
            sw(L + 1, R)
        if gt(arr[L], arr[R]):
            sw(L, R)
        if gt(arr[L + 1], arr[L]):
            sw(L + 1, L)
        i, j, piv = L + 1, R, arr[L]
        while True:
            i += 1
            while gt(piv, arr[i]):
                i += 1
            j -= 1
            while gt(arr[j], piv):
                j -= 1
            if j < i:
                break
            sw(i, j)
        sw(L, j)
        if j <= k:
            L = i
        if j >= k:
            R = j - 1
    return idx[k]
