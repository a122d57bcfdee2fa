package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// gcPercent reads the collector's GOGC (SetGCPercent sets and returns the
// old one: set it back).
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestGCFloor(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct {
		name  string
		floor int64
		want  int // GOGC until the first collection
	}{
		{"12 MiB", 12 << 20, 300},
		{"a 1 MB object", gcFloorFor(1 << 20), 400},
		{"below the runtime's own first goal", 2 << 20, 100},
		{"huge", gcFloorFor(1 << 62), 1<<31 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			setGCFloor(tc.floor)
			if got := gcPercent(); got != tc.want {
				t.Fatalf("GOGC %d after setGCFloor(%d), want %d", got, tc.floor, tc.want)
			}
			// The first collection gives the default back.
			deadline := time.Now().Add(10 * time.Second)
			for gcPercent() != 100 {
				if time.Now().After(deadline) {
					t.Fatalf("GOGC still %d after collections", gcPercent())
				}
				runtime.GC()
				time.Sleep(time.Millisecond)
			}
		})
	}
	t.Run("the user's GOGC wins", func(t *testing.T) {
		t.Setenv("GOGC", "100")
		setGCFloor(64 << 20)
		if got := gcPercent(); got != 100 {
			t.Fatalf("GOGC %d with GOGC set in the environment, want it left alone (100)", got)
		}
	})
}
