#include "heap/allocator.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace tdist {

HeapAllocator::HeapAllocator(size_t begin, size_t end) {
  if (end > begin) free_[begin] = end - begin;
}

std::optional<size_t> HeapAllocator::plan(size_t size, size_t align) const {
  size_t n = round(std::max<size_t>(size, 1));
  align = std::max(align, kMinAlign);
  for (auto [off, len] : free_) {
    size_t start = (off + align - 1) / align * align;
    if (start - off <= len && len - (start - off) >= n) return start;
  }
  return std::nullopt;
}

void HeapAllocator::commit(size_t start, size_t size) {
  size_t n = round(std::max<size_t>(size, 1));
  auto it = free_.upper_bound(start);
  TDIST_CHECK(it != free_.begin(), TDIST_ERR_INNER, "allocator: commit outside free space");
  --it;
  size_t off = it->first, len = it->second;
  TDIST_CHECK(start >= off && start + n <= off + len, TDIST_ERR_INNER,
              "allocator: commit of %zu bytes at %zu does not fit", n, start);
  free_.erase(it);
  if (start > off) free_[off] = start - off;
  if (start + n < off + len) free_[start + n] = off + len - (start + n);
  live_[start] = n;
}

size_t HeapAllocator::block_size(size_t offset) const {
  auto it = live_.find(offset);
  return it == live_.end() ? 0 : it->second;
}

void HeapAllocator::release(size_t offset) {
  auto it = live_.find(offset);
  TDIST_CHECK(it != live_.end(), TDIST_ERR_INNER, "allocator: release of unknown block %zu", offset);
  size_t off = offset, len = it->second;
  live_.erase(it);
  auto next = free_.lower_bound(off);
  if (next != free_.end() && next->first == off + len) {
    len += next->second;
    free_.erase(next);
  }
  auto prev = free_.lower_bound(off);
  if (prev != free_.begin()) {
    --prev;
    if (prev->first + prev->second == off) {
      off = prev->first;
      len += prev->second;
      free_.erase(prev);
    }
  }
  free_[off] = len;
}

size_t HeapAllocator::largest_free() const {
  size_t best = 0;
  for (auto [o, l] : free_) best = std::max(best, l);
  return best;
}

size_t HeapAllocator::free_total() const {
  size_t n = 0;
  for (auto [o, l] : free_) n += l;
  return n;
}

}  // namespace tdist
