/* fakecuda: the subset of the CUDA driver API that tgrad and Triton 3.9 call, backed by host memory.
 *
 * Built by the test suite (tests/fakecuda/__init__.py) as a shared library with the soname
 * libcuda.so.1 and loaded in place of the real driver. Configuration, read once at cuInit:
 *   FAKECUDA_DEVICES  number of devices (default 1)
 *   FAKECUDA_CC       compute capability, 80 or 90 (default 90)
 *   FAKECUDA_MEM_MB   memory per device in MiB (default 8192)
 *   FAKECUDA_EXEC     0: launches are checked and queued but no kernel runs (host-time measurements)
 *
 * Device memory is host memory: each device owns one reserved mmap range at its own address, and an
 * allocation is made readable and writable there (a freed one is made inaccessible again; next-fit
 * placement with a gap between allocations keeps a freed or out-of-range address from being silently
 * reused). Calls check what a GPU rejects: no current context, a pointer that is not a live device
 * allocation (host memory, freed, out of range), a module or stream of another context, a kernel
 * argument on another device. Copies, memsets, kernel launches and event records are queued per
 * stream and only done at a synchronization point (a synchronous copy, cu*Synchronize, a query that
 * completes), so a missing synchronize shows up as wrong data. The legacy default stream (0)
 * orders with every blocking stream of its context, as on a GPU.
 *
 * Kernels are run by the host process: cuLaunchKernel hands (function, grid, params) to a launch
 * callback registered with fakecuda_set_callbacks (tgrad's tests register one that decodes the
 * arguments and returns a job id); the job is queued and run by the run callback when the stream
 * drains. A failing job makes the context's error sticky (CUDA_ERROR_ILLEGAL_ADDRESS), as on a GPU.
 *
 * Graphs (stream capture), following the driver API's contract (cuda.h, cuStreamBeginCapture and
 * cuThreadExchangeStreamCaptureMode): capture cannot start on the legacy stream; while a stream
 * captures, the kernels, async copies/memsets and event records issued on it are recorded as the
 * nodes of a graph, not run (a launch's arguments are decoded at capture, as the driver copies them).
 * A call that would wait for the capturing stream (cuStreamSynchronize/Query on it, cuCtxSynchronize,
 * cuMemFree) fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and work on the legacy stream (every
 * synchronous copy) with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, since it orders with a capturing
 * blocking stream; both invalidate the capture, and cuStreamEndCapture then returns
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and no graph.  A copy from or to pageable host memory cannot
 * be captured (UNSUPPORTED).  cuMemAlloc is allowed.  cuGraphInstantiateWithFlags makes an executable
 * graph; cuGraphLaunch queues its nodes, in order, on a stream like other async work (done at a
 * synchronization point; a launch is ordered after the previous launch on that stream).  Fork/join
 * captures (events joining other streams into the capture) are not modelled: CUDA_ERROR_NOT_SUPPORTED.
 */
#define _GNU_SOURCE
#include "cuda.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_DEVICES 8
#define GAP (64u << 10)       /* unmapped bytes kept after each allocation */
#define ALIGN 256u

typedef long long (*launch_cb_t)(unsigned long long fn, unsigned gx, unsigned gy, unsigned gz,
                                 void **params, int device);
typedef int (*run_cb_t)(long long job, int mode);     /* mode: RUN_ONCE, RUN_KEEP, DROP */
enum { RUN_ONCE = 0, RUN_KEEP = 1, DROP = 2 };

/* ------------------------------------------------------------------ state */
typedef struct { uintptr_t base; size_t size, mapped; } Alloc;

struct CUctx_st;
typedef struct Op {
  struct Op *next;
  enum { OP_COPY, OP_MEMSET, OP_LAUNCH, OP_RECORD, OP_WAIT } kind;
  unsigned long long seq;
  void *dst; const void *src; size_t n; unsigned char byte; void *owned; /* owned: staged source */
  long long job; int keep;     /* keep: a graph node's job, run again at the next launch */
  struct Nodes *owner;         /* a launched graph node: the graph's nodes, kept alive until it has run */
  struct CUevent_st *event; struct CUstream_st *wait_stream; unsigned long long wait_seq;
} Op;

struct CUstream_st {
  struct CUctx_st *ctx;
  unsigned flags;           /* CU_STREAM_NON_BLOCKING or 0 */
  int legacy, destroyed, busy;
  Op *head, *tail;
  unsigned long long enq_seq, done_seq;
  struct CUstream_st *next_in_ctx;
  pthread_cond_t cond;
  CUstreamCaptureStatus capture;      /* NONE, ACTIVE or INVALIDATED */
  struct CUgraph_st *graph;           /* the graph being captured */
  unsigned long long capture_id;
};

/* a graph's nodes, in capture order (one chain: a capture on one stream); shared by the graph and its
 * executable graphs, the jobs dropped when the last of them is destroyed */
typedef struct Nodes { int refs, n, cap; Op *ops; struct CUctx_st *ctx; } Nodes;
struct CUgraph_st { Nodes *nodes; int destroyed; };
struct CUgraphExec_st { Nodes *nodes; struct CUctx_st *ctx; int destroyed; };

struct CUctx_st {
  int device, retained;
  CUresult sticky;
  struct CUstream_st legacy;
  struct CUstream_st *streams;
  size_t limits[16];
};

struct CUevent_st {
  unsigned flags;
  struct CUstream_st *stream; unsigned long long seq;   /* last record */
  int recorded, done;
  int captured;             /* last recorded inside a capture (not on a stream) */
  double ms;
};

struct CUmod_st { struct CUctx_st *ctx; const char *image; size_t size; int loaded; };
struct CUfunc_st { struct CUmod_st *mod; char name[256]; int attrs[16]; };

typedef struct { void *ptr; size_t size; } HostAlloc;

static pthread_mutex_t M = PTHREAD_MUTEX_INITIALIZER;
static int initialized, n_devices = 1, cc = 90, exec_kernels = 1;
static size_t mem_total;
static struct { uintptr_t lo, hi, cursor; size_t used; Alloc *a; int n, cap; struct CUctx_st ctx; } dev[MAX_DEVICES];
static HostAlloc *hosts; static int n_hosts, cap_hosts;
static launch_cb_t launch_cb;
static run_cb_t run_cb;
static unsigned long long n_launches, n_calls;   /* kernel launches; driver API calls */
static __thread struct CUctx_st *ctx_stack[32];
static __thread int ctx_depth;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static struct CUctx_st *current(void) { return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL; }

/* the live allocation of device d holding [p, p + n), or NULL */
static Alloc *find_in(int d, uintptr_t p, size_t n) {
  int lo = 0, hi = dev[d].n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    Alloc *a = &dev[d].a[mid];
    if (p < a->base) hi = mid - 1;
    else if (p >= a->base + a->size) lo = mid + 1;
    else return (n <= a->base + a->size - p) ? a : NULL;
  }
  return NULL;
}

static int device_of(uintptr_t p) {
  for (int d = 0; d < n_devices; d++)
    if (p >= dev[d].lo && p < dev[d].hi) return d;
  return -1;
}

/* CUDA_SUCCESS if [p, p + n) is inside one live device allocation; *d gets its device */
static CUresult check_dev(CUdeviceptr p, size_t n, int *d) {
  int k = device_of(p);
  if (k < 0 || !find_in(k, p, n ? n : 1)) return CUDA_ERROR_INVALID_VALUE;
  if (d) *d = k;
  return CUDA_SUCCESS;
}

static HostAlloc *find_host(uintptr_t p, size_t n) {
  for (int i = 0; i < n_hosts; i++)
    if (p >= (uintptr_t)hosts[i].ptr && p + n <= (uintptr_t)hosts[i].ptr + hosts[i].size) return &hosts[i];
  return NULL;
}

/* host memory given as the host side of a copy must not be device memory */
static CUresult check_host(const void *p) {
  return device_of((uintptr_t)p) >= 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

#define ENTER()                                                                    \
  pthread_mutex_lock(&M);                                                          \
  n_calls++;                                                                       \
  if (!initialized) { pthread_mutex_unlock(&M); return CUDA_ERROR_NOT_INITIALIZED; }
#define LEAVE(rc) do { CUresult rc_ = (rc); pthread_mutex_unlock(&M); return rc_; } while (0)
#define NEED_CTX(c)                                                                \
  struct CUctx_st *c = current();                                                  \
  if (!c) LEAVE(CUDA_ERROR_INVALID_CONTEXT);                                       \
  if (c->sticky) LEAVE(c->sticky);

/* ------------------------------------------------------------------ streams */
static struct CUstream_st *resolve(struct CUctx_st *c, CUstream s) {
  if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) return &c->legacy;
  for (struct CUstream_st *t = c->streams; t; t = t->next_in_ctx)
    if (t == s && !t->destroyed) return t;
  return NULL;   /* destroyed, or a stream of another context */
}

static Op *new_op(int kind) {
  Op *o = calloc(1, sizeof(Op));
  o->kind = kind;
  return o;
}

static void push_raw(struct CUstream_st *s, Op *o) {
  o->seq = ++s->enq_seq;
  if (s->tail) s->tail->next = o; else s->head = o;
  s->tail = o;
}

/* queue o on s; the legacy stream and blocking streams wait for each other's earlier work */
static unsigned long long enqueue(struct CUstream_st *s, Op *o) {
  struct CUctx_st *c = s->ctx;
  if (s->legacy) {
    for (struct CUstream_st *t = c->streams; t; t = t->next_in_ctx)
      if (!(t->flags & CU_STREAM_NON_BLOCKING) && t->enq_seq > t->done_seq) {
        Op *w = new_op(OP_WAIT);
        w->wait_stream = t; w->wait_seq = t->enq_seq;
        push_raw(s, w);
      }
  } else if (!(s->flags & CU_STREAM_NON_BLOCKING) && c->legacy.enq_seq > c->legacy.done_seq) {
    Op *w = new_op(OP_WAIT);
    w->wait_stream = &c->legacy; w->wait_seq = c->legacy.enq_seq;
    push_raw(s, w);
  }
  push_raw(s, o);
  return o->seq;
}

static void drain(struct CUstream_st *s, unsigned long long upto);
static void nodes_unref(struct Nodes *g);

/* runs one op; called with M held, may release it around callbacks */
static void execute(struct CUstream_st *s, Op *o) {
  struct CUctx_st *c = s->ctx;
  switch (o->kind) {
  case OP_COPY:
    if (!c->sticky) memmove(o->dst, o->owned ? o->owned : o->src, o->n);
    break;
  case OP_MEMSET:
    if (!c->sticky) memset(o->dst, o->byte, o->n);
    break;
  case OP_LAUNCH:
    if (run_cb && o->job >= 0) {
      run_cb_t cb = run_cb;
      pthread_mutex_unlock(&M);
      int rc = cb(o->job, o->keep ? RUN_KEEP : RUN_ONCE);   /* runs the job (or skips it: context failed) */
      pthread_mutex_lock(&M);
      if (rc && !c->sticky) c->sticky = (CUresult)rc;
    }
    break;
  case OP_RECORD:
    if (o->event && o->event->seq == o->seq && o->event->stream == s) {
      o->event->done = 1;
      o->event->ms = now_ms();
    }
    break;
  case OP_WAIT:
    drain(o->wait_stream, o->wait_seq);
    break;
  }
}

/* run s's queued ops up to sequence number upto (everything: ~0ULL); called with M held */
static void drain(struct CUstream_st *s, unsigned long long upto) {
  while (s->done_seq < upto && s->head) {
    if (s->busy) {                      /* another thread is running this stream's head op */
      pthread_cond_wait(&s->cond, &M);
      continue;
    }
    Op *o = s->head;
    s->busy = 1;
    execute(s, o);
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    s->done_seq = o->seq;
    s->busy = 0;
    pthread_cond_broadcast(&s->cond);
    if (o->owner) nodes_unref(o->owner);
    free(o->owned);
    free(o);
  }
}

static void drain_ctx(struct CUctx_st *c) {
  drain(&c->legacy, ~0ULL);
  for (struct CUstream_st *t = c->streams; t; t = t->next_in_ctx) drain(t, ~0ULL);
}

static void stream_init(struct CUstream_st *s, struct CUctx_st *c, unsigned flags, int legacy) {
  memset(s, 0, sizeof(*s));
  s->ctx = c; s->flags = flags; s->legacy = legacy;
  pthread_cond_init(&s->cond, NULL);
}

/* ------------------------------------------------------------------ stream capture */
#define CAPTURED (-1)        /* capture_check: the op becomes a node of the stream's graph */
static unsigned long long n_captures;

static int ctx_capturing(struct CUctx_st *c) {
  for (struct CUstream_st *t = c->streams; t; t = t->next_in_ctx)
    if (!t->destroyed && t->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE) return 1;
  return 0;
}

static void invalidate_ctx(struct CUctx_st *c) {
  for (struct CUstream_st *t = c->streams; t; t = t->next_in_ctx)
    if (t->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE) t->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
}

/* may work go to stream s now? 0: queue it as usual; CAPTURED: record it in s's graph; else the error
 * (and the capture is invalidated).  wait: the call waits for s's work (a synchronous copy, a sync) */
static int capture_check(struct CUctx_st *c, struct CUstream_st *s, int wait) {
  if (s->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    if (!wait) return CAPTURED;
    s->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (s->capture == CU_STREAM_CAPTURE_STATUS_INVALIDATED) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (s->legacy) {           /* the legacy stream orders with every blocking stream: none may capture */
    int hit = 0;
    for (struct CUstream_st *t = c->streams; t; t = t->next_in_ctx)
      if (!t->destroyed && !(t->flags & CU_STREAM_NON_BLOCKING) && t->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        t->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
        hit = 1;
      }
    if (hit) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  }
  return 0;
}

static void add_node(struct CUstream_st *s, Op *o) {
  Nodes *g = s->graph->nodes;
  if (g->n == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 16;
    g->ops = realloc(g->ops, g->cap * sizeof(Op));
  }
  o->next = NULL;
  o->keep = 1;
  o->owner = NULL;
  g->ops[g->n++] = *o;
  free(o);
}

/* ------------------------------------------------------------------ fakecuda's own entry points */
EXPORT void fakecuda_set_callbacks(launch_cb_t launch, run_cb_t run) {
  pthread_mutex_lock(&M);
  launch_cb = launch; run_cb = run;
  pthread_mutex_unlock(&M);
}

/* 0 if p is inside a live allocation: its device, allocation start and size */
EXPORT int fakecuda_pointer_info(unsigned long long p, int *device, unsigned long long *base,
                                 unsigned long long *size) {
  pthread_mutex_lock(&M);
  int d = device_of(p);
  Alloc *a = d >= 0 ? find_in(d, p, 1) : NULL;
  if (a) { *device = d; *base = a->base; *size = a->size; }
  pthread_mutex_unlock(&M);
  return a ? 0 : 1;
}

EXPORT unsigned long long fakecuda_launch_count(void) { return n_launches; }
EXPORT unsigned long long fakecuda_call_count(void) { return n_calls; }
EXPORT int fakecuda_exec_enabled(void) { return exec_kernels; }

/* ------------------------------------------------------------------ init, devices */
static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

EXPORT CUresult cuInit(unsigned int flags) {
  if (flags) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&M);
  if (!initialized) {
    n_devices = env_int("FAKECUDA_DEVICES", 1);
    cc = env_int("FAKECUDA_CC", 90);
    exec_kernels = env_int("FAKECUDA_EXEC", 1);
    mem_total = (size_t)env_int("FAKECUDA_MEM_MB", 8192) << 20;
    if (n_devices < 0 || n_devices > MAX_DEVICES || (cc != 80 && cc != 90)) {
      fprintf(stderr, "fakecuda: FAKECUDA_DEVICES must be 0..%d and FAKECUDA_CC 80 or 90\n", MAX_DEVICES);
      pthread_mutex_unlock(&M);
      return CUDA_ERROR_INVALID_VALUE;
    }
    for (int d = 0; d < n_devices; d++) {
      size_t span = 4 * mem_total;     /* room for next-fit placement and gaps */
      void *hint = (void *)(uintptr_t)(0x600000000000ULL + ((unsigned long long)d << 40));
      void *p = mmap(hint, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) { pthread_mutex_unlock(&M); return CUDA_ERROR_OUT_OF_MEMORY; }
      dev[d].lo = dev[d].cursor = (uintptr_t)p;
      dev[d].hi = (uintptr_t)p + span;
      dev[d].ctx.device = d;
      stream_init(&dev[d].ctx.legacy, &dev[d].ctx, 0, 1);
      dev[d].ctx.limits[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20;
      dev[d].ctx.limits[CU_LIMIT_STACK_SIZE] = 1024;
    }
    initialized = 1;
  }
  pthread_mutex_unlock(&M);
  return n_devices ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

EXPORT CUresult cuDriverGetVersion(int *v) { *v = 12080; return CUDA_SUCCESS; }

EXPORT CUresult cuDeviceGetCount(int *count) {
  ENTER();
  *count = n_devices;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  ENTER();
  if (ordinal < 0 || ordinal >= n_devices) LEAVE(CUDA_ERROR_INVALID_DEVICE);
  *d = ordinal;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  ENTER();
  if (d < 0 || d >= n_devices) LEAVE(CUDA_ERROR_INVALID_DEVICE);
  snprintf(name, len, "%s (fakecuda)", cc == 90 ? "NVIDIA H100 80GB HBM3" : "NVIDIA A100-SXM4-80GB");
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d) {
  ENTER();
  if (d < 0 || d >= n_devices) LEAVE(CUDA_ERROR_INVALID_DEVICE);
  *bytes = mem_total;
  LEAVE(CUDA_SUCCESS);
}

/* Opt-in shared memory per block, as real hardware: A100 (sm_80) 163 KiB, H100 (sm_90) 227 KiB. */
static int shared_optin(void) { return cc == 90 ? 232448 : 166912; }

EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute attr, CUdevice d) {
  ENTER();
  if (d < 0 || d >= n_devices) LEAVE(CUDA_ERROR_INVALID_DEVICE);
  int h = cc == 90;
  switch (attr) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = cc / 10; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = cc % 10; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = h ? 132 : 108; break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = shared_optin(); break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = h ? 233472 : 167936; break;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = h ? 1980000 : 1410000; break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = h ? 2619000 : 1593000; break;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = h ? 5120 : 5120; break;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = h ? 52428800 : 41943040; break;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 1; break;
  case CU_DEVICE_ATTRIBUTE_INTEGRATED: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *v = d + 1; break;
  case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *v = 1; break;
  default: *v = 0;
  }
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice a, CUdevice b) {
  ENTER();
  if (a < 0 || a >= n_devices || b < 0 || b >= n_devices) LEAVE(CUDA_ERROR_INVALID_DEVICE);
  *can = 0;     /* kernels never touch another device's memory here; copies between devices work */
  LEAVE(CUDA_SUCCESS);
}

/* ------------------------------------------------------------------ contexts */
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice d) {
  ENTER();
  if (d < 0 || d >= n_devices) LEAVE(CUDA_ERROR_INVALID_DEVICE);
  dev[d].ctx.retained++;
  *pctx = &dev[d].ctx;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice d) {
  ENTER();
  if (d < 0 || d >= n_devices) LEAVE(CUDA_ERROR_INVALID_DEVICE);
  if (dev[d].ctx.retained > 0) dev[d].ctx.retained--;
  LEAVE(CUDA_SUCCESS);
}

static int valid_ctx(CUcontext c) {
  for (int d = 0; d < n_devices; d++)
    if (c == &dev[d].ctx) return dev[d].ctx.retained > 0;
  return 0;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext c) {
  ENTER();
  if (c && !valid_ctx(c)) LEAVE(CUDA_ERROR_INVALID_CONTEXT);
  if (ctx_depth == 0) {
    if (c) ctx_stack[ctx_depth++] = c;
  } else {
    ctx_stack[ctx_depth - 1] = c;
  }
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *c) {
  ENTER();
  *c = current();
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuCtxPushCurrent(CUcontext c) {
  ENTER();
  if (!c || !valid_ctx(c)) LEAVE(CUDA_ERROR_INVALID_CONTEXT);
  if (ctx_depth == 32) LEAVE(CUDA_ERROR_INVALID_VALUE);
  ctx_stack[ctx_depth++] = c;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuCtxPopCurrent(CUcontext *c) {
  ENTER();
  if (!ctx_depth) LEAVE(CUDA_ERROR_INVALID_CONTEXT);
  struct CUctx_st *top = ctx_stack[--ctx_depth];
  if (c) *c = top;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuCtxGetDevice(CUdevice *d) {
  ENTER();
  struct CUctx_st *c = current();
  if (!c) LEAVE(CUDA_ERROR_INVALID_CONTEXT);
  *d = c->device;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuCtxSynchronize(void) {
  ENTER();
  NEED_CTX(c);
  if (ctx_capturing(c)) { invalidate_ctx(c); LEAVE(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); }
  drain_ctx(c);
  LEAVE(c->sticky);
}

EXPORT CUresult cuCtxGetLimit(size_t *v, CUlimit lim) {
  ENTER();
  NEED_CTX(c);
  if ((unsigned)lim >= 16) LEAVE(CUDA_ERROR_INVALID_VALUE);
  *v = c->limits[lim];
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuCtxSetLimit(CUlimit lim, size_t v) {
  ENTER();
  NEED_CTX(c);
  if ((unsigned)lim >= 16) LEAVE(CUDA_ERROR_INVALID_VALUE);
  c->limits[lim] = v;
  LEAVE(CUDA_SUCCESS);
}

/* ------------------------------------------------------------------ memory */
EXPORT CUresult cuMemAlloc(CUdeviceptr *p, size_t n) {
  ENTER();
  NEED_CTX(c);
  if (n == 0) LEAVE(CUDA_ERROR_INVALID_VALUE);
  int d = c->device;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t mapped = (n + page - 1) / page * page;
  if (dev[d].used + n > mem_total) LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
  /* next fit: the first gap at or after the cursor (wrapping once) that holds mapped + GAP bytes */
  uintptr_t found = 0;
  for (int pass = 0; pass < 2 && !found; pass++) {
    uintptr_t at = pass ? dev[d].lo : dev[d].cursor;
    int i = 0;
    while (i < dev[d].n && dev[d].a[i].base + dev[d].a[i].mapped + GAP <= at) i++;
    for (;; i++) {
      if (i < dev[d].n && dev[d].a[i].base < at + mapped + GAP) {
        at = dev[d].a[i].base + dev[d].a[i].mapped + GAP;
        continue;
      }
      if (at + mapped + GAP <= dev[d].hi) found = at;
      break;
    }
  }
  if (!found) LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
  if (mprotect((void *)found, mapped, PROT_READ | PROT_WRITE)) LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
  if (dev[d].n == dev[d].cap) {
    dev[d].cap = dev[d].cap ? 2 * dev[d].cap : 64;
    dev[d].a = realloc(dev[d].a, dev[d].cap * sizeof(Alloc));
  }
  int i = 0;
  while (i < dev[d].n && dev[d].a[i].base < found) i++;
  memmove(&dev[d].a[i + 1], &dev[d].a[i], (dev[d].n - i) * sizeof(Alloc));
  dev[d].a[i] = (Alloc){found, n, mapped};
  dev[d].n++;
  dev[d].used += n;
  dev[d].cursor = found + mapped + GAP;
  *p = found;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuMemFree(CUdeviceptr p) {
  ENTER();
  NEED_CTX(c);
  int d = device_of(p);
  Alloc *a = d >= 0 ? find_in(d, p, 1) : NULL;
  if (!a || a->base != p) LEAVE(CUDA_ERROR_INVALID_VALUE);
  if (ctx_capturing(&dev[d].ctx)) { invalidate_ctx(&dev[d].ctx); LEAVE(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); }
  drain_ctx(&dev[d].ctx);      /* cuMemFree synchronizes: queued work may still use the block */
  a = find_in(d, p, 1);        /* (the table may have moved while callbacks ran) */
  if (!a || a->base != p) LEAVE(CUDA_ERROR_INVALID_VALUE);
  madvise((void *)a->base, a->mapped, MADV_DONTNEED);
  mprotect((void *)a->base, a->mapped, PROT_NONE);
  dev[d].used -= a->size;
  int i = (int)(a - dev[d].a);
  memmove(&dev[d].a[i], &dev[d].a[i + 1], (dev[d].n - i - 1) * sizeof(Alloc));
  dev[d].n--;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuMemGetInfo(size_t *free_b, size_t *total) {
  ENTER();
  NEED_CTX(c);
  *free_b = mem_total - dev[c->device].used;
  *total = mem_total;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuMemHostAlloc(void **pp, size_t n, unsigned int flags) {
  ENTER();
  NEED_CTX(c);
  (void)flags;
  void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
  if (n_hosts == cap_hosts) {
    cap_hosts = cap_hosts ? 2 * cap_hosts : 64;
    hosts = realloc(hosts, cap_hosts * sizeof(HostAlloc));
  }
  hosts[n_hosts++] = (HostAlloc){p, n ? n : 1};
  *pp = p;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuMemAllocHost(void **pp, size_t n) { return cuMemHostAlloc(pp, n, 0); }

EXPORT CUresult cuMemFreeHost(void *p) {
  ENTER();
  for (int i = 0; i < n_hosts; i++)
    if (hosts[i].ptr == p) {
      for (int d = 0; d < n_devices; d++)
        if (ctx_capturing(&dev[d].ctx)) { invalidate_ctx(&dev[d].ctx); LEAVE(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); }
      for (int d = 0; d < n_devices; d++) drain_ctx(&dev[d].ctx);
      munmap(p, hosts[i].size);
      hosts[i] = hosts[--n_hosts];
      LEAVE(CUDA_SUCCESS);
    }
  LEAVE(CUDA_ERROR_INVALID_VALUE);
}

EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr p) {
  ENTER();
  int d = device_of(p);
  Alloc *a = d >= 0 ? find_in(d, p, 1) : NULL;
  HostAlloc *h = a ? NULL : find_host(p, 1);
  if (!a && !h) LEAVE(CUDA_ERROR_INVALID_VALUE);       /* plain host memory, freed or never allocated */
  switch (attr) {
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data = p; break;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    if (a) LEAVE(CUDA_ERROR_INVALID_VALUE);
    *(void **)data = (void *)p;
    break;
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *(unsigned *)data = a ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    break;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = a ? d : 0; break;
  case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = a ? &dev[d].ctx : NULL; break;
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = a ? a->base : (CUdeviceptr)h->ptr; break;
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = a ? a->size : h->size; break;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned *)data = 0; break;
  default: LEAVE(CUDA_ERROR_INVALID_VALUE);
  }
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuPointerGetAttributes(unsigned n, CUpointer_attribute *attrs, void **data, CUdeviceptr p) {
  for (unsigned i = 0; i < n; i++) {
    CUresult rc = cuPointerGetAttribute(data[i], attrs[i], p);
    if (rc) return rc;
  }
  return CUDA_SUCCESS;
}

/* copies: kinds of side 'D' (a live device range) or 'H' (host memory that is not device memory) */
static CUresult copy_common(void *dst, int dkind, const void *src, int skind, size_t n, CUstream hs, int async) {
  ENTER();
  NEED_CTX(c);
  struct CUstream_st *s = resolve(c, hs);
  if (!s) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  if (n == 0) LEAVE(CUDA_SUCCESS);
  CUresult rc = dkind == 'D' ? check_dev((CUdeviceptr)dst, n, NULL) : check_host(dst);
  if (!rc) rc = skind == 'D' ? check_dev((CUdeviceptr)src, n, NULL) : check_host(src);
  if (rc) LEAVE(rc);
  Op *o = new_op(OP_COPY);
  o->dst = dst; o->src = src; o->n = n;
  int pinned_host = (skind == 'H' && find_host((uintptr_t)src, n)) || (dkind == 'H' && find_host((uintptr_t)dst, n));
  int k = capture_check(c, s, !async);
  if (k == CAPTURED) {
    if ((skind == 'H' || dkind == 'H') && !pinned_host) {      /* pageable memory: not capturable */
      s->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
      free(o);
      LEAVE(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    }
    add_node(s, o);
    LEAVE(CUDA_SUCCESS);
  }
  if (k) { free(o); LEAVE((CUresult)k); }
  if (async && skind == 'H' && !pinned_host) {
    o->owned = malloc(n);           /* pageable source: staged now, as the driver does */
    memcpy(o->owned, src, n);
  }
  unsigned long long seq = enqueue(s, o);
  if (!async || (dkind == 'H' && !pinned_host)) drain(s, seq);   /* to pageable memory: returns when done */
  LEAVE(c->sticky);
}

EXPORT CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) {
  return copy_common((void *)dst, 'D', src, 'H', n, NULL, 0);
}
EXPORT CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) {
  return copy_common(dst, 'H', (const void *)src, 'D', n, NULL, 0);
}
EXPORT CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return copy_common((void *)dst, 'D', (const void *)src, 'D', n, NULL, 0);
}
EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
  return copy_common((void *)dst, 'D', src, 'H', n, s, 1);
}
EXPORT CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s) {
  return copy_common(dst, 'H', (const void *)src, 'D', n, s, 1);
}
EXPORT CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return copy_common((void *)dst, 'D', (const void *)src, 'D', n, s, 1);
}

/* between devices: the source device's pending work is finished first (its legacy stream) */
static CUresult peer_common(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n,
                            CUstream hs, int async) {
  ENTER();
  NEED_CTX(c);
  if (!valid_ctx(dc) || !valid_ctx(sc)) LEAVE(CUDA_ERROR_INVALID_CONTEXT);
  int dd, sd;
  CUresult rc = check_dev(dst, n, &dd);
  if (!rc) rc = check_dev(src, n, &sd);
  if (rc) LEAVE(rc);
  if (dd != dc->device || sd != sc->device) LEAVE(CUDA_ERROR_INVALID_VALUE);
  struct CUstream_st *s = resolve(c, hs);
  if (!s) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  int k = capture_check(c, s, !async);
  if (k == CAPTURED) { s->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED; LEAVE(CUDA_ERROR_NOT_SUPPORTED); }
  if (k) LEAVE((CUresult)k);
  struct CUctx_st *other = sc == c ? dc : sc;
  if (other != c) drain_ctx(other);
  Op *o = new_op(OP_COPY);
  o->dst = (void *)dst; o->src = (const void *)src; o->n = n;
  unsigned long long seq = enqueue(s, o);
  if (!async) drain(s, seq);
  LEAVE(c->sticky);
}

EXPORT CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n) {
  return peer_common(dst, dc, src, sc, n, NULL, 0);
}
EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n,
                                  CUstream s) {
  return peer_common(dst, dc, src, sc, n, s, 1);
}

static CUresult memset_common(CUdeviceptr dst, unsigned char b, size_t n, CUstream hs, int async) {
  ENTER();
  NEED_CTX(c);
  struct CUstream_st *s = resolve(c, hs);
  if (!s) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  if (n == 0) LEAVE(CUDA_SUCCESS);
  CUresult rc = check_dev(dst, n, NULL);
  if (rc) LEAVE(rc);
  int k = capture_check(c, s, 0);
  if (k && k != CAPTURED) LEAVE((CUresult)k);
  Op *o = new_op(OP_MEMSET);
  o->dst = (void *)dst; o->byte = b; o->n = n;
  if (k == CAPTURED) add_node(s, o); else enqueue(s, o);
  (void)async;       /* memset returns before it is done even when "synchronous", as on a GPU */
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuMemsetD8(CUdeviceptr dst, unsigned char b, size_t n) { return memset_common(dst, b, n, NULL, 0); }
EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char b, size_t n, CUstream s) {
  return memset_common(dst, b, n, s, 1);
}

/* ------------------------------------------------------------------ streams and events */
EXPORT CUresult cuStreamCreate(CUstream *ps, unsigned int flags) {
  ENTER();
  NEED_CTX(c);
  struct CUstream_st *s = malloc(sizeof(*s));
  stream_init(s, c, flags & CU_STREAM_NON_BLOCKING, 0);
  s->next_in_ctx = c->streams;
  c->streams = s;
  *ps = s;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuStreamCreateWithPriority(CUstream *ps, unsigned int flags, int prio) {
  (void)prio;
  return cuStreamCreate(ps, flags);
}

EXPORT CUresult cuStreamDestroy(CUstream hs) {
  ENTER();
  NEED_CTX(c);
  struct CUstream_st *s = resolve(c, hs);
  if (!s || s->legacy) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  drain(s, ~0ULL);          /* a GPU finishes the queued work; the handle dies now (kept: events may point at it) */
  s->destroyed = 1;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuStreamSynchronize(CUstream hs) {
  ENTER();
  NEED_CTX(c);
  struct CUstream_st *s = resolve(c, hs);
  if (!s) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  int k = capture_check(c, s, 1);
  if (k) LEAVE((CUresult)k);
  drain(s, ~0ULL);
  LEAVE(c->sticky);
}

EXPORT CUresult cuStreamQuery(CUstream hs) {
  ENTER();
  NEED_CTX(c);
  struct CUstream_st *s = resolve(c, hs);
  if (!s) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  int k = capture_check(c, s, 1);
  if (k) LEAVE((CUresult)k);
  int pending = s->head != NULL;
  drain(s, ~0ULL);     /* "still running" once; by the next query the GPU has finished */
  LEAVE(pending ? CUDA_ERROR_NOT_READY : c->sticky);
}

EXPORT CUresult cuStreamIsCapturing(CUstream hs, CUstreamCaptureStatus *st) {
  ENTER();
  NEED_CTX(c);
  struct CUstream_st *s = resolve(c, hs);
  if (!s) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  if (s->legacy) {
    for (struct CUstream_st *t = c->streams; t; t = t->next_in_ctx)
      if (!t->destroyed && !(t->flags & CU_STREAM_NON_BLOCKING) && t->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE)
        LEAVE(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  }
  *st = s->capture;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuEventCreate(CUevent *pe, unsigned int flags) {
  ENTER();
  NEED_CTX(c);
  struct CUevent_st *e = calloc(1, sizeof(*e));
  e->flags = flags;
  *pe = e;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuEventDestroy(CUevent e) {
  ENTER();
  (void)e;      /* kept alive: queued record ops may still point at it */
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuEventRecord(CUevent e, CUstream hs) {
  ENTER();
  NEED_CTX(c);
  struct CUstream_st *s = resolve(c, hs);
  if (!s || !e) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  int k = capture_check(c, s, 0);
  if (k && k != CAPTURED) LEAVE((CUresult)k);
  Op *o = new_op(OP_RECORD);
  o->event = e;
  if (k == CAPTURED) {
    e->captured = 1;
    add_node(s, o);
    LEAVE(CUDA_SUCCESS);
  }
  e->stream = s; e->recorded = 1; e->done = 0; e->captured = 0;
  e->seq = enqueue(s, o);
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuEventQuery(CUevent e) {
  ENTER();
  if (!e) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  if (e->captured) LEAVE(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  if (!e->recorded || e->done) LEAVE(CUDA_SUCCESS);
  drain(e->stream, e->seq);     /* "not ready" once; by the next query the GPU has got there */
  LEAVE(CUDA_ERROR_NOT_READY);
}

EXPORT CUresult cuEventSynchronize(CUevent e) {
  ENTER();
  if (!e) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  if (e->captured) LEAVE(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  if (e->recorded) drain(e->stream, e->seq);
  LEAVE(e->recorded ? e->stream->ctx->sticky : CUDA_SUCCESS);
}

EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  ENTER();
  if (!a || !b) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  if (!a->recorded || !b->recorded) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  if (!a->done || !b->done) LEAVE(CUDA_ERROR_NOT_READY);
  *ms = (float)(b->ms - a->ms);
  LEAVE(CUDA_SUCCESS);
}

#undef cuEventElapsedTime
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { return cuEventElapsedTime_v2(ms, a, b); }

EXPORT CUresult cuStreamWaitEvent(CUstream hs, CUevent e, unsigned int flags) {
  ENTER();
  NEED_CTX(c);
  (void)flags;
  struct CUstream_st *s = resolve(c, hs);
  if (!s || !e) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  if (s->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    if (e->captured) LEAVE(CUDA_SUCCESS);     /* recorded earlier in this one-stream capture: already ordered */
    s->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;       /* an event from outside the capture */
    LEAVE(CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
  }
  if (e->captured) LEAVE(CUDA_ERROR_NOT_SUPPORTED);          /* a fork/join into a capture: not modelled */
  int k = capture_check(c, s, 0);
  if (k) LEAVE((CUresult)k);
  if (e->recorded && !e->done) {
    Op *o = new_op(OP_WAIT);
    o->wait_stream = e->stream; o->wait_seq = e->seq;
    enqueue(s, o);
  }
  LEAVE(CUDA_SUCCESS);
}

/* ------------------------------------------------------------------ modules and launches */
static size_t elf_size(const char *img) {
  if (memcmp(img, "\x7f" "ELF", 4) || img[4] != 2) return 0;     /* a 64-bit ELF cubin */
  uint64_t shoff; uint16_t shentsize, shnum;
  memcpy(&shoff, img + 0x28, 8);
  memcpy(&shentsize, img + 0x3A, 2);
  memcpy(&shnum, img + 0x3C, 2);
  return shoff + (size_t)shentsize * shnum;
}

EXPORT CUresult cuModuleLoadData(CUmodule *pm, const void *image) {
  ENTER();
  NEED_CTX(c);
  size_t n = image ? elf_size(image) : 0;
  if (!n) LEAVE(CUDA_ERROR_INVALID_IMAGE);
  struct CUmod_st *m = calloc(1, sizeof(*m));
  m->ctx = c; m->size = n; m->loaded = 1;
  m->image = malloc(n);
  memcpy((void *)m->image, image, n);
  *pm = m;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuModuleUnload(CUmodule m) {
  ENTER();
  if (!m || !m->loaded) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  m->loaded = 0;        /* the struct stays: functions of it are rejected from now on */
  free((void *)m->image);
  m->image = NULL;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuModuleGetFunction(CUfunction *pf, CUmodule m, const char *name) {
  ENTER();
  NEED_CTX(c);
  if (!m || !m->loaded || m->ctx != c) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  size_t k = strlen(name);
  if (k >= 256 || !memmem(m->image, m->size, name, k + 1)) LEAVE(CUDA_ERROR_NOT_FOUND);
  struct CUfunc_st *f = calloc(1, sizeof(*f));
  f->mod = m;
  strcpy(f->name, name);
  *pf = f;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f) {
  ENTER();
  if (!f || !f->mod->loaded) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  switch (a) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 32; break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION: case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = cc; break;
  default: *v = (unsigned)a < 16 ? f->attrs[a] : 0;
  }
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
  ENTER();
  if (!f || !f->mod->loaded) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  if ((unsigned)a < 16) f->attrs[a] = v;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuFuncSetCacheConfig(CUfunction f, CUfunc_cache cfg) {
  (void)cfg;
  return f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuOccupancyMaxActiveClusters(int *n, CUfunction f, const CUlaunchConfig *cfg) {
  (void)f; (void)cfg;
  *n = 1;
  return CUDA_SUCCESS;
}

static CUresult launch_common(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned threads,
                              unsigned shmem, CUstream hs, void **params) {
  pthread_mutex_lock(&M);
  n_calls++;
  if (!initialized) LEAVE(CUDA_ERROR_NOT_INITIALIZED);
  NEED_CTX(c);
  if (!f || !f->mod->loaded) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  if (f->mod->ctx != c) LEAVE(CUDA_ERROR_INVALID_HANDLE);     /* loaded on another device */
  struct CUstream_st *s = resolve(c, hs);
  if (!s) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  if (!gx || !gy || !gz || gy > 65535 || gz > 65535 || threads > 1024) LEAVE(CUDA_ERROR_INVALID_VALUE);
  if ((long long)shmem + f->attrs[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES] > shared_optin())
    LEAVE(CUDA_ERROR_INVALID_VALUE);                /* more shared memory than a block of this device has */
  int k = capture_check(c, s, 0);
  if (k && k != CAPTURED) LEAVE((CUresult)k);
  n_launches++;
  long long job = -1;
  if (exec_kernels) {
    if (!launch_cb) {
      fprintf(stderr, "fakecuda: a kernel was launched but no launch callback is registered\n");
      LEAVE(CUDA_ERROR_NOT_INITIALIZED);
    }
    launch_cb_t cb = launch_cb;
    int device = c->device;
    pthread_mutex_unlock(&M);
    job = cb((unsigned long long)(uintptr_t)f, gx, gy, gz, params, device);   /* decodes params now */
    pthread_mutex_lock(&M);
    if (job < 0) LEAVE((CUresult)-job);
  }
  if (job >= 0 || k == CAPTURED) {     /* (a node without a job when kernels are not executed) */
    Op *o = new_op(OP_LAUNCH);
    o->job = job;
    if (k == CAPTURED && s->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE) add_node(s, o); else enqueue(s, o);
  }
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra) {
  if (extra) return CUDA_ERROR_NOT_SUPPORTED;
  return launch_common(f, cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ,
                       cfg->blockDimX * cfg->blockDimY * cfg->blockDimZ, cfg->sharedMemBytes, cfg->hStream, params);
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shmem, CUstream s, void **params, void **extra) {
  if (extra) return CUDA_ERROR_NOT_SUPPORTED;
  return launch_common(f, gx, gy, gz, bx * by * bz, shmem, s, params);
}


/* ------------------------------------------------------------------ graphs */
EXPORT CUresult cuStreamBeginCapture(CUstream hs, CUstreamCaptureMode mode) {     /* = cuStreamBeginCapture_v2 */
  ENTER();
  NEED_CTX(c);
  struct CUstream_st *s = resolve(c, hs);
  if (!s) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  if (s->legacy) LEAVE(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);   /* not on the legacy stream */
  if (s->capture != CU_STREAM_CAPTURE_STATUS_NONE) LEAVE(CUDA_ERROR_ILLEGAL_STATE);
  if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED) LEAVE(CUDA_ERROR_INVALID_VALUE);
  s->graph = calloc(1, sizeof(struct CUgraph_st));
  s->graph->nodes = calloc(1, sizeof(Nodes));
  s->graph->nodes->refs = 1;
  s->graph->nodes->ctx = c;
  s->capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  s->capture_id = ++n_captures;
  LEAVE(CUDA_SUCCESS);
}

/* the graph, an executable graph or a queued launch of a node is done with the nodes; called with M held */
static void nodes_unref(Nodes *g) {
  if (--g->refs) return;
  for (int i = 0; i < g->n; i++)
    if (g->ops[i].kind == OP_LAUNCH && g->ops[i].job >= 0 && run_cb) run_cb(g->ops[i].job, DROP);
  free(g->ops);
  free(g);
}

EXPORT CUresult cuStreamEndCapture(CUstream hs, CUgraph *pg) {
  ENTER();
  NEED_CTX(c);
  struct CUstream_st *s = resolve(c, hs);
  if (!s) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  if (s->capture == CU_STREAM_CAPTURE_STATUS_NONE) LEAVE(CUDA_ERROR_ILLEGAL_STATE);
  struct CUgraph_st *g = s->graph;
  int ok = s->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE;
  s->capture = CU_STREAM_CAPTURE_STATUS_NONE;
  s->graph = NULL;
  for (int i = 0; i < g->nodes->n; i++)        /* events recorded in it are "recorded" again once launched */
    if (g->nodes->ops[i].kind == OP_RECORD) g->nodes->ops[i].event->captured = ok;
  if (!ok) {
    nodes_unref(g->nodes);
    free(g);
    *pg = NULL;
    LEAVE(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  }
  *pg = g;
  LEAVE(CUDA_SUCCESS);
}

static CUresult capture_info(CUstream hs, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g, size_t *ndeps) {
  ENTER();
  NEED_CTX(c);
  struct CUstream_st *s = resolve(c, hs);
  if (!s) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  int k = s->legacy ? capture_check(c, s, 0) : 0;
  if (k) LEAVE((CUresult)k);
  *st = s->capture;
  if (id && s->capture) *id = s->capture_id;
  if (g) *g = s->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE ? s->graph : NULL;
  if (ndeps) *ndeps = s->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE && s->graph->nodes->n ? 1 : 0;
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream hs, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                          const CUgraphNode **deps, size_t *ndeps) {
  if (deps) *deps = NULL;      /* node handles are not modelled: the nodes form one chain */
  return capture_info(hs, st, id, g, ndeps);
}

EXPORT CUresult cuStreamGetCaptureInfo(CUstream hs, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                       const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps) {
  if (deps) *deps = NULL;      /* = cuStreamGetCaptureInfo_v3 */
  if (edges) *edges = NULL;
  return capture_info(hs, st, id, g, ndeps);
}

EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *pe, CUgraph g, unsigned long long flags) {
  ENTER();
  NEED_CTX(c);
  if (!g || g->destroyed) LEAVE(CUDA_ERROR_INVALID_VALUE);
  (void)flags;
  struct CUgraphExec_st *e = calloc(1, sizeof(*e));
  e->nodes = g->nodes;
  e->nodes->refs++;
  e->ctx = c;
  *pe = e;
  LEAVE(CUDA_SUCCESS);
}

/* queues the nodes on the stream, in order, as the calls that were captured would have */
EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream hs) {
  ENTER();
  NEED_CTX(c);
  if (!e || e->destroyed) LEAVE(CUDA_ERROR_INVALID_VALUE);
  if (e->ctx != c) LEAVE(CUDA_ERROR_INVALID_CONTEXT);
  struct CUstream_st *s = resolve(c, hs);
  if (!s) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  int k = capture_check(c, s, 0);
  if (k == CAPTURED) { s->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED; LEAVE(CUDA_ERROR_NOT_SUPPORTED); }
  if (k) LEAVE((CUresult)k);
  Nodes *g = e->nodes;
  for (int i = 0; i < g->n; i++) {
    Op *o = new_op(g->ops[i].kind);
    *o = g->ops[i];
    o->next = NULL;
    o->owner = g;
    g->refs++;
    unsigned long long seq = enqueue(s, o);
    if (o->kind == OP_RECORD) {
      o->event->stream = s; o->event->seq = seq;
      o->event->recorded = 1; o->event->done = 0; o->event->captured = 0;
    }
  }
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuGraphExecDestroy(CUgraphExec e) {
  ENTER();
  if (!e || e->destroyed) LEAVE(CUDA_ERROR_INVALID_VALUE);
  e->destroyed = 1;      /* the struct stays: a stale handle is rejected */
  nodes_unref(e->nodes);
  LEAVE(CUDA_SUCCESS);
}

EXPORT CUresult cuGraphDestroy(CUgraph g) {
  ENTER();
  if (!g || g->destroyed) LEAVE(CUDA_ERROR_INVALID_VALUE);
  g->destroyed = 1;
  nodes_unref(g->nodes);
  LEAVE(CUDA_SUCCESS);
}

EXPORT unsigned long long fakecuda_graph_nodes(CUgraph g) { return g ? (unsigned long long)g->nodes->n : 0; }

/* ------------------------------------------------------------------ errors */
static const struct { CUresult rc; const char *name, *text; } ERRORS[] = {
  {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
  {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
  {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
  {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
  {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
  {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
  {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
  {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
  {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
  {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
  {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
  {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
  {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
  {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
  {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "the operation is not permitted in the current state"},
  {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
   "operation not permitted when stream is capturing"},
  {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
   "operation failed due to a previous error during capture"},
  {CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
   "dependency created on uncaptured work in another stream"},
  {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
   "operation would make the legacy stream depend on a capturing blocking stream"},
};

EXPORT CUresult cuGetErrorName(CUresult rc, const char **s) {
  for (size_t i = 0; i < sizeof(ERRORS) / sizeof(ERRORS[0]); i++)
    if (ERRORS[i].rc == rc) { *s = ERRORS[i].name; return CUDA_SUCCESS; }
  *s = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult rc, const char **s) {
  for (size_t i = 0; i < sizeof(ERRORS) / sizeof(ERRORS[0]); i++)
    if (ERRORS[i].rc == rc) { *s = ERRORS[i].text; return CUDA_SUCCESS; }
  *s = "unknown error";
  return CUDA_ERROR_INVALID_VALUE;
}
