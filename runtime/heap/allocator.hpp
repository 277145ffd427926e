// Deterministic symmetric-heap allocator: the same sequence of calls yields the same offsets on
// every PE (first fit over an offset-ordered free list). It never touches memory; it only hands out
// offsets. Collective checking happens in the caller (runtime/core/context.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

namespace tdist {

class HeapAllocator {
 public:
  static constexpr size_t kMinAlign = 256;
  HeapAllocator(size_t begin, size_t end);
  // Offset a call would return, without committing (nullopt when it does not fit).
  std::optional<size_t> plan(size_t size, size_t align) const;
  void commit(size_t offset, size_t size);  // size as passed to plan (rounded internally)
  // Size of the live block at `offset`, or 0 if none starts there.
  size_t block_size(size_t offset) const;
  void release(size_t offset);
  size_t largest_free() const;
  size_t free_total() const;  // every free byte, in however many blocks
  size_t live_blocks() const { return live_.size(); }

 private:
  static size_t round(size_t n) { return (n + kMinAlign - 1) / kMinAlign * kMinAlign; }
  std::map<size_t, size_t> free_;  // offset -> size
  std::map<size_t, size_t> live_;  // offset -> size
};

}  // namespace tdist
