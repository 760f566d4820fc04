"""vLLM's automatic prefix cache, as a model for the double (tests only).

Written from vLLM 0.33.0 (github.com/vllm-project/vllm tag v0.33.0):
- `vllm/v1/core/kv_cache_utils.py` / `kv_cache_manager.py`: the prompt is cut into full blocks
  of `block_size` tokens (CacheConfig.DEFAULT_BLOCK_SIZE = 16 in `vllm/config/cache.py`); each
  block's hash chains its parent's hash and its token ids; a request's hit is the longest run
  of leading blocks already cached, capped at `num_tokens - 1` ("we must recompute the last
  token to obtain logits", `get_computed_blocks`), so a hit is a multiple of the block size;
- `vllm/v1/core/block_pool.py`: freed blocks stay cached and are evicted least recently used
  when a new block is needed;
- `vllm/v1/metrics/loggers.py`: counters `vllm:prefix_cache_queries` (prompt tokens asked)
  and `vllm:prefix_cache_hits` (tokens found), exposed with `_total`.

Only prompt blocks are cached here (vLLM also caches generated tokens' blocks; a chat history
re-renders the assistant turn, so the double's hits are a lower bound of vLLM's).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import List, Sequence, Tuple

DEFAULT_BLOCK_SIZE = 16


class PrefixCache:
    def __init__(self, capacity_blocks: int = 65536, block_size: int = DEFAULT_BLOCK_SIZE):
        self.block_size = block_size
        self.capacity = capacity_blocks
        self._blocks: "OrderedDict[bytes, None]" = OrderedDict()
        self._lock = threading.Lock()
        self.queries = 0  # tokens
        self.hits = 0  # tokens

    def _hashes(self, ids: Sequence[int]) -> List[bytes]:
        out, parent = [], b""
        for i in range(0, len(ids) - len(ids) % self.block_size, self.block_size):
            parent = hashlib.sha256(parent + repr(tuple(ids[i:i + self.block_size])).encode()
                                    ).digest()
            out.append(parent)
        return out

    def lookup_and_insert(self, ids: Sequence[int]) -> Tuple[int, int]:
        """(queried tokens, hit tokens) of one request; its full blocks are cached after."""
        hashes = self._hashes(ids)
        limit = max(len(ids) - 1, 0)
        with self._lock:
            hit = 0
            for h in hashes:
                if h not in self._blocks or hit + self.block_size > limit:
                    break
                hit += self.block_size
            for h in hashes:
                self._blocks[h] = None
                self._blocks.move_to_end(h)
            while len(self._blocks) > self.capacity:
                self._blocks.popitem(last=False)
            self.queries += len(ids)
            self.hits += hit
        return len(ids), hit

    def reset(self) -> None:
        with self._lock:
            self._blocks.clear()
