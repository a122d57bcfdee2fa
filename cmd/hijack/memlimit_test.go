package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// memoryLimit reads the runtime's soft memory limit.
func memoryLimit() int64 { return debug.SetMemoryLimit(-1) }

func TestArchiveMemoryLimit(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))

	t.Run("small members: the limit holds, and is given back", func(t *testing.T) {
		restore := archiveMemoryLimit(100 << 10)
		want := int64(archiveLimitBase + archiveLimitPerByte*100<<10)
		if got := memoryLimit(); got != want {
			restore()
			t.Fatalf("limit %d, want %d", got, want)
		}
		// collections with little live keep it
		for range 3 {
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
		if got := memoryLimit(); got != want {
			restore()
			t.Fatalf("limit %d after collections of a small heap, want %d", got, want)
		}
		restore()
		if got := memoryLimit(); got != math.MaxInt64 {
			t.Fatalf("limit %d after restore, want none", got)
		}
		restore() // (twice: nothing more)
	})

	t.Run("a live heap over half the limit lifts it", func(t *testing.T) {
		restore := archiveMemoryLimit(0)
		defer restore()
		live := make([]byte, archiveLimitBase/2+(4<<20))
		for i := range live {
			live[i] = byte(i)
		}
		deadline := time.Now().Add(10 * time.Second)
		for memoryLimit() != math.MaxInt64 {
			if time.Now().After(deadline) {
				t.Fatalf("limit still %d with %d bytes live", memoryLimit(), len(live))
			}
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
		runtime.KeepAlive(live)
	})

	t.Run("the user's GOMEMLIMIT wins", func(t *testing.T) {
		t.Setenv("GOMEMLIMIT", "1GiB")
		restore := archiveMemoryLimit(1 << 10)
		defer restore()
		if got := memoryLimit(); got != math.MaxInt64 {
			t.Fatalf("limit %d with GOMEMLIMIT set in the environment, want it left alone", got)
		}
	})
}
