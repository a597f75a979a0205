// BufferPool: the caching allocator behind Storage (core/tensor.h).
//
// A freed buffer is not returned to the system but cached, keyed by its exact
// size, and handed to the next request of that size. A training step asks
// for the same sizes every step, so after the first step it takes every
// buffer from the cache and no fresh pages fault in (a large cost for eager
// frameworks).
//
// The cached bytes are bounded. When a release would take them over the cap,
// the buffers released longest ago go back to the system first (least
// recently used), so sizes a run no longer asks for (an earlier phase's, a
// shorter sequence's) leave, and sizes it keeps cycling through stay. Unless
// set (SetCap), the cap is half as much again as the most bytes ever live at
// once. It scales with the run, and a training step fits: the buffers a step
// frees come to a little more than its peak of live bytes (sizes that are
// not live at the same moment), and the half keeps them all, so steady
// training allocates nothing
// (Transformer.TrainingStepReusesBuffersInSteadyState). The pool then holds at
// most 2.5 times the peak of live bytes.
//
// Every operation is O(1) (plus one hash lookup when allocating) under one
// mutex: each buffer carries its list links in a header in front of its
// data. Release runs in destructors, also while an exception (often
// std::bad_alloc) unwinds the stack, so it never allocates.
#ifndef ROTOR_CORE_BUFFER_POOL_H_
#define ROTOR_CORE_BUFFER_POOL_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace rotor {

// Bytes counted as a buffer's size (its floats, at least one, times 4).
struct MemoryStats {
  size_t live_bytes = 0;       // held by live buffers
  size_t peak_live_bytes = 0;  // most live bytes since the last ResetPeak
  size_t cached_bytes = 0;     // freed buffers kept for reuse (<= cap_bytes)
  size_t cap_bytes = 0;        // the bound on cached_bytes now
  uint64_t reused = 0;         // allocations served from the cache
  uint64_t fresh = 0;    // allocations that took new memory from the system
  uint64_t evicted = 0;  // cached buffers given back to the system
};

class BufferPool {
 public:
  // kFollowPeak: the cap is 1.5 times the most bytes ever live at once.
  static constexpr size_t kFollowPeak = SIZE_MAX;

  explicit BufferPool(size_t cap_bytes = kFollowPeak) : cap_(cap_bytes) {}
  ~BufferPool();  // frees the cached buffers; live ones must be released
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of max(size, 1) floats aligned to 64 bytes (a cache line and an
  // AVX-512 vector), contents unspecified. Throws rotor::Error when the
  // system has no memory for it.
  float* Allocate(size_t size);
  // Gives back a buffer Allocate(size) returned.
  void Release(float* buffer, size_t size) noexcept;

  // Sets the cap on cached bytes (kFollowPeak: follow the peak of live
  // bytes, as by default), evicting down to it at once.
  void SetCap(size_t cap_bytes);
  // Gives every cached buffer back to the system (the cap stays).
  void ReleaseCached();

  MemoryStats Stats();
  void ResetPeak();

 private:
  struct Block;
  // The cached buffers of one size, newest first, and how many buffers of
  // that size exist (live or cached): the entry lives while any does, so a
  // release finds it through its block without a lookup.
  struct SizeClass {
    size_t size = 0;
    size_t count = 0;
    Block* newest = nullptr;
    Block* oldest = nullptr;
  };

  void AddLive(size_t bytes);
  size_t CapLocked() const;
  // Unlinks a cached block from both lists.
  void Unlink(Block* block);
  // Takes least recently released blocks out of the cache until at most
  // `bytes` stay, chaining them through `evicted` to be freed outside the
  // lock.
  void EvictTo(size_t bytes, Block** evicted);
  // Drops one buffer of the block's size from the count (erasing the size's
  // entry at zero) and chains the block onto `to_free`.
  void Forget(Block* block, Block** to_free);
  static void FreeChain(Block* chain);

  std::mutex mutex_;
  size_t cap_;
  size_t high_water_ = 0;  // most live bytes ever (ResetPeak leaves it)
  std::unordered_map<size_t, SizeClass> sizes_;
  Block* newest_ = nullptr;  // the cache in release order, all sizes
  Block* oldest_ = nullptr;
  MemoryStats stats_;
};

}  // namespace rotor

#endif  // ROTOR_CORE_BUFFER_POOL_H_
