package abi

// The inline cache probe (ABI.md, "The inline cache probe"): inserted code
// looks a page up in the calling thread's recent-page cache itself, in the
// runtime's layout (rt.h), and calls the runtime only when the cache lacks
// it. The runtime exports what the probe reads: vpt_probe_tls, its
// per-thread state (initial-exec TLS), and vpt_probe_hot, its hot line.
const (
	// ProbeCacheOff is the offset in vpt_probe_tls of the table the
	// thread's probes read: its cache, the address of CacheEntries 8-byte
	// entries, or before the thread's first event (and after its last)
	// a table of as many zeros, which no key matches: never 0, so the
	// probe does not test it. (Objects of earlier versions read the
	// cache's address, 0 when there is none, at offset 88 of
	// vpt_probe_thread, the same state: the runtime keeps both.)
	ProbeCacheOff = 112
	// ProbeEpochOff is the offset in vpt_probe_hot of the epoch, which
	// cache keys add: ((page+1) << 2) + epoch; an entry is a key with the
	// kinds (KindRead, KindWrite) its page was recorded for in its low
	// two bits. Objects with FlagEpoch read the epoch from their own word,
	// which the runtime keeps equal to this one; objects of earlier
	// versions read it here.
	ProbeEpochOff = 16
	// CacheEntries is the cache's size: CacheEntries/2 sets of two
	// 8-byte entries. A key's set is at byte offset (key << 2) &
	// CacheSetMask: bits 2-15 of the key, its page+1 modulo 16384, so
	// that consecutive pages take consecutive sets (a table of up to 64
	// MiB has no two pages in one set, and its entries are dense).
	CacheEntries = 32768
	CacheSetMask = 0x3fff0
)
