package emit

import (
	"errors"
	"strings"
	"testing"

	"hijack/elfobj"
	"hijack/ibr"
	"hijack/internal/testutil"
)

// TestEmitSizeLimit: Emit checks the new size of every code section
// against File.MaxSize before it allocates it.
func TestEmitSizeLimit(t *testing.T) {
	o := testutil.BuildIBR(t, testutil.Compile(t, t.TempDir(), "gcc", "../testdata/src/kitchen.c", "-O2"))
	nop := &ibr.Snippet{Code: make([]byte, 15)}
	FillNops(nop.Code)
	var largest int
	for _, s := range o.Code {
		for i := range s.Insts {
			if s.CanInsertBefore(i) {
				if err := s.InsertBefore(i, nop); err != nil {
					t.Fatal(err)
				}
			}
		}
		largest = max(largest, len(s.Elf.Data))
	}
	o.File.MaxSize = uint64(largest) * 2 // far less than 15 bytes more per instruction
	err := Emit(o, nil)
	if !errors.Is(err, elfobj.ErrTooLarge) || !strings.HasPrefix(err.Error(), "section .text") {
		t.Fatalf("Emit: %v, want ErrTooLarge naming the section", err)
	}
}
