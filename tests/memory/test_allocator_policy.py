"""The caching allocator's fast paths (lazy merge of the last free, in-place free-list updates) keep PyTorch's
policy exactly: every block it hands out is the one a plain model of that policy picks."""
import random

from tgrad.memory.allocator import MIN_BLOCK, SMALL_SIZE, CachingAllocator, round_size, segment_size
from tgrad.memory.host import HostBackend

MiB = 1 << 20


class Model:
    """Best fit by (size, address) over the pool's free blocks, split when the rest is >= 512 B (small pool) or
    > 1 MiB (large), a freed block merged with its free neighbours; a new segment when nothing fits.
    Blocks are [segment, offset, size, free]; addresses are (segment number, offset)."""

    def __init__(self):
        self.segments = []      # per segment: its pool and its blocks in address order

    def malloc(self, nbytes):
        size = round_size(nbytes)
        small = size <= SMALL_SIZE
        fits = [b for s, (pool, blocks) in enumerate(self.segments) if pool == small
                for b in blocks if b[3] and b[2] >= size]
        if fits:
            b = min(fits, key=lambda b: (b[2], b[0], b[1]))
        else:
            b = [len(self.segments), 0, segment_size(size), True]
            self.segments.append((small, [b]))
        blocks = self.segments[b[0]][1]
        rest = b[2] - size
        if rest >= (MIN_BLOCK if small else SMALL_SIZE + 1):
            blocks.insert(blocks.index(b) + 1, [b[0], b[1] + size, rest, True])
            b[2] = size
        b[3] = False
        return b

    def free(self, b):
        blocks = self.segments[b[0]][1]
        b[3] = True
        i = blocks.index(b)
        if i + 1 < len(blocks) and blocks[i + 1][3]:
            b[2] += blocks.pop(i + 1)[2]
        if i > 0 and blocks[i - 1][3]:
            blocks[i - 1][2] += blocks.pop(i)[2]


def _run(seed, steps=1500):
    rng = random.Random(seed)
    alloc, model = CachingAllocator(HostBackend(), "cpu"), Model()
    bases = []      # segment base addresses in the order the allocator asked for them
    live = []
    for i in range(steps):
        if live and rng.random() < 0.5:
            # mostly the latest (a step's temporaries), sometimes any
            k = len(live) - 1 if rng.random() < 0.6 else rng.randrange(len(live))
            blk, mb = live.pop(k)
            alloc.free(blk)
            model.free(mb)
        else:
            n = rng.choice((4, 320, 512, 4000, 40000)) if rng.random() < 0.7 else \
                rng.randrange(1, 3 * MiB if rng.random() < 0.05 else 64 << 10)
            blk, mb = alloc.malloc(n), model.malloc(n)
            seg = max((b for b in alloc._segments if b <= blk.ptr), default=None)
            if seg not in bases:
                bases.append(seg)
            assert (bases.index(seg), blk.ptr - seg, blk.size) == (mb[0], mb[1], mb[2]), f"step {i}"
            live.append((blk, mb))
        if i % 97 == 0:
            alloc._check_invariants()
    for blk, mb in live:
        alloc.free(blk)
    alloc._check_invariants()
    assert alloc.memory_allocated() == 0
    alloc.empty_cache()


def test_blocks_match_the_policy_model():
    for seed in range(3):
        _run(seed)
