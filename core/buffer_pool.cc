#include "core/buffer_pool.h"

#include <algorithm>

#include "core/checked_math.h"
#include "core/error.h"
#include "hwy/aligned_allocator.h"

namespace rotor {

// The header in front of every buffer: its links in the two lists of cached
// buffers (all sizes by release time; its own size), valid while cached.
// HWY_ALIGNMENT bytes, so the data after it keeps hwy's 64-byte alignment.
struct BufferPool::Block {
  SizeClass* size_class;
  Block* newer;  // all sizes, by release time
  Block* older;
  Block* newer_same_size;
  Block* older_same_size;
};

namespace {

constexpr size_t kHeaderBytes = HWY_ALIGNMENT;
static_assert(sizeof(void*) * 5 <= kHeaderBytes);

// Exact for sizes Allocate accepted.
size_t Bytes(size_t size) { return (size == 0 ? 1 : size) * sizeof(float); }

}  // namespace

BufferPool::~BufferPool() { ReleaseCached(); }

float* BufferPool::Allocate(size_t size) {
  const size_t bytes = CheckedMul(size == 0 ? size_t{1} : size, sizeof(float),
                                  "the bytes of a tensor");
  SizeClass* size_class;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    size_class = &sizes_[size];
    size_class->size = size;
    if (Block* block = size_class->newest) {
      Unlink(block);
      stats_.cached_bytes -= bytes;
      ++stats_.reused;
      AddLive(bytes);
      return reinterpret_cast<float*>(reinterpret_cast<char*>(block) +
                                      kHeaderBytes);
    }
    ++size_class->count;  // keeps the entry while this buffer is made
  }
  // Outside the lock: a large allocation (page-table work) must not stall
  // the other threads' reuse.
  void* raw = hwy::AllocateAlignedBytes(
      CheckedAdd(bytes, kHeaderBytes, "the bytes of a tensor"), nullptr,
      nullptr);
  std::lock_guard<std::mutex> lock(mutex_);
  if (raw == nullptr) {
    if (--size_class->count == 0) sizes_.erase(size);
    throw Error(
        StrCat("out of memory allocating a tensor of ", bytes, " bytes"));
  }
  ++stats_.fresh;
  AddLive(bytes);
  Block* block = static_cast<Block*>(raw);
  block->size_class = size_class;
  return reinterpret_cast<float*>(static_cast<char*>(raw) + kHeaderBytes);
}

void BufferPool::Release(float* buffer, size_t size) noexcept {
  Block* block =
      reinterpret_cast<Block*>(reinterpret_cast<char*>(buffer) - kHeaderBytes);
  const size_t bytes = Bytes(size);
  Block* to_free = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.live_bytes -= bytes;
    const size_t cap = CapLocked();
    if (bytes > cap) {
      Forget(block, &to_free);  // would evict the whole cache and still not fit
    } else {
      EvictTo(cap - bytes, &to_free);
      SizeClass& size_class = *block->size_class;
      block->older = newest_;
      block->newer = nullptr;
      (newest_ ? newest_->newer : oldest_) = block;
      newest_ = block;
      block->older_same_size = size_class.newest;
      block->newer_same_size = nullptr;
      (size_class.newest ? size_class.newest->newer_same_size
                         : size_class.oldest) = block;
      size_class.newest = block;
      stats_.cached_bytes += bytes;
    }
  }
  FreeChain(to_free);
}

void BufferPool::SetCap(size_t cap_bytes) {
  Block* to_free = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cap_ = cap_bytes;
    EvictTo(CapLocked(), &to_free);
  }
  FreeChain(to_free);
}

void BufferPool::ReleaseCached() {
  Block* to_free = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    EvictTo(0, &to_free);
  }
  FreeChain(to_free);
}

MemoryStats BufferPool::Stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  MemoryStats stats = stats_;
  stats.cap_bytes = CapLocked();
  return stats;
}

void BufferPool::ResetPeak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_live_bytes = stats_.live_bytes;
}

void BufferPool::AddLive(size_t bytes) {
  stats_.live_bytes += bytes;
  stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, stats_.live_bytes);
  high_water_ = std::max(high_water_, stats_.live_bytes);
}

size_t BufferPool::CapLocked() const {
  return cap_ == kFollowPeak ? high_water_ + high_water_ / 2 : cap_;
}

void BufferPool::Unlink(Block* block) {
  (block->newer ? block->newer->older : newest_) = block->older;
  (block->older ? block->older->newer : oldest_) = block->newer;
  SizeClass& size_class = *block->size_class;
  (block->newer_same_size ? block->newer_same_size->older_same_size
                          : size_class.newest) = block->older_same_size;
  (block->older_same_size ? block->older_same_size->newer_same_size
                          : size_class.oldest) = block->newer_same_size;
}

void BufferPool::EvictTo(size_t bytes, Block** evicted) {
  while (stats_.cached_bytes > bytes) {
    Block* block = oldest_;
    Unlink(block);
    stats_.cached_bytes -= Bytes(block->size_class->size);
    ++stats_.evicted;
    Forget(block, evicted);
  }
}

void BufferPool::Forget(Block* block, Block** to_free) {
  SizeClass* size_class = block->size_class;
  if (--size_class->count == 0) sizes_.erase(size_class->size);
  block->older = *to_free;
  *to_free = block;
}

void BufferPool::FreeChain(Block* chain) {
  while (chain != nullptr) {
    Block* next = chain->older;
    hwy::FreeAlignedBytes(chain, nullptr, nullptr);
    chain = next;
  }
}

}  // namespace rotor
