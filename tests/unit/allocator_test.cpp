#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "heap/allocator.hpp"

using tdist::HeapAllocator;

TEST(Allocator, DeterministicAcrossInstances) {
  // Two allocators fed the same random call sequence hand out the same offsets (what makes the
  // heap symmetric across PEs).
  HeapAllocator a(4096, 1 << 24), b(4096, 1 << 24);
  std::mt19937 rng(std::random_device{}());
  std::vector<size_t> live;
  for (int i = 0; i < 2000; ++i) {
    if (!live.empty() && rng() % 3 == 0) {
      size_t k = rng() % live.size();
      a.release(live[k]);
      b.release(live[k]);
      live.erase(live.begin() + long(k));
      continue;
    }
    size_t sz = 1 + rng() % 50000, al = size_t(1) << (rng() % 14);
    auto pa = a.plan(sz, al), pb = b.plan(sz, al);
    ASSERT_EQ(pa.has_value(), pb.has_value());
    if (!pa) continue;
    ASSERT_EQ(*pa, *pb);
    ASSERT_EQ(*pa % std::max<size_t>(al, HeapAllocator::kMinAlign), 0u);
    a.commit(*pa, sz);
    b.commit(*pb, sz);
    live.push_back(*pa);
  }
}

TEST(Allocator, NoOverlapAndFullCoalescing) {
  HeapAllocator a(0, 1 << 20);
  size_t whole = a.largest_free();
  std::vector<std::pair<size_t, size_t>> blocks;
  for (size_t sz : {100, 5000, 256, 70000, 1}) {
    auto off = a.plan(sz, 1);
    ASSERT_TRUE(off);
    a.commit(*off, sz);
    for (auto [o, s] : blocks) EXPECT_TRUE(*off >= o + s || *off + sz <= o) << "overlap";
    blocks.push_back({*off, sz});
  }
  EXPECT_EQ(a.block_size(blocks[0].first), 256u);
  EXPECT_EQ(a.block_size(blocks[0].first + 1), 0u);
  // free in a scrambled order: everything must coalesce back into one block
  for (int i : {2, 0, 4, 1, 3}) a.release(blocks[size_t(i)].first);
  EXPECT_EQ(a.largest_free(), whole);
  EXPECT_EQ(a.live_blocks(), 0u);
}

TEST(Allocator, ExhaustionIsReportedNotCorrupting) {
  HeapAllocator a(0, 4096);
  EXPECT_FALSE(a.plan(8192, 1));
  auto o = a.plan(4096, 1);
  ASSERT_TRUE(o);
  a.commit(*o, 4096);
  EXPECT_FALSE(a.plan(1, 1));
  a.release(*o);
  EXPECT_TRUE(a.plan(4096, 1));
}
