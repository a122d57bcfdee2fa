package abi

// The inline cache probe (ABI.md, "The inline cache probe"): inserted code
// looks a page up in the calling thread's recent-page cache itself, in the
// runtime's layout (rt.h), and calls the runtime only when the cache lacks
// it. The runtime exports what the probe reads: vpt_probe_thread, its
// per-thread state (initial-exec TLS), and vpt_probe_hot, its hot line.
const (
	// ProbeCacheOff is the offset in vpt_probe_thread of the thread's
	// cache: the address of CacheEntries 8-byte entries, 0 before the
	// thread's first event.
	ProbeCacheOff = 88
	// ProbeEpochOff is the offset in vpt_probe_hot of the epoch, which
	// cache keys add: ((page+1) << 2) + epoch; an entry is a key with the
	// kinds (KindRead, KindWrite) its page was recorded for in its low
	// two bits.
	ProbeEpochOff = 16
	// CacheEntries is the cache's size: CacheEntries/2 sets of two
	// entries, the set of a key being the top bits of key*CacheHash
	// (mod 2^64) shifted right by CacheShift.
	CacheEntries = 32768
	CacheHash    = 0x9e3779b97f4a7c15
	CacheShift   = 50
)
