package blockcount_test

import (
	"debug/elf"
	"os"
	"strings"
	"testing"

	"hijack/internal/testutil"
	"hijack/preset"
	"hijack/preset/blockcount"
	"hijack/rewrite"
	"hijack/rules"
	"hijack/vptrace/abi"
)

// A function whose blocks leave no register to borrow: after the
// compare, every register but rsp is read by the trap's block (int3 is
// taken to read them all), and the flags are live into the jne.
const noRegisterAsm = `
	.text
	.globl	f
	.type	f, @function
f:	testq	%rdi, %rdi
	jne	1f
	int3
1:	leaq	1(%rdi), %rax
	ret
	.size	f, .-f
	.section .note.GNU-stack,"",@progbits
`

// TestBlocks: the rewritten object describes every counted block (function,
// offset) in .blockcount; a block no code can be placed in is left out of
// the table with a warning, never failing the object.
func TestBlocks(t *testing.T) {
	dir := t.TempDir()
	obj := testutil.CompileString(t, dir, "gcc", "noreg.s", noRegisterAsm)
	data, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	for _, tls := range []string{"local-exec", "initial-exec"} {
		rf, err := rules.Default(preset.Set{blockcount.Preset{}}.Registry(), "blockcount", "tls="+tls)
		if err != nil {
			t.Fatal(err)
		}
		var warnings []string
		out, _, err := rewrite.Rewrite("noreg.o", data, rf, preset.Set{blockcount.Preset{}}, func(w string) { warnings = append(warnings, w) })
		if err != nil {
			t.Fatalf("%s: %v", tls, err)
		}
		f, err := elf.NewFile(strings.NewReader(string(out)))
		if err != nil {
			t.Fatal(err)
		}
		sec := f.Section(".blockcount")
		if sec == nil {
			t.Fatalf("%s: no .blockcount section", tls)
		}
		b, _ := sec.Data()
		desc, err := abi.UnmarshalBlocks(b)
		if err != nil {
			t.Fatal(err)
		}
		var offs []uint32
		for k := 0; k < int(desc.NBlocks); k++ {
			blk, err := abi.UnmarshalBlock(b[abi.BlocksSize+abi.BlockSize*k:])
			if err != nil {
				t.Fatal(err)
			}
			offs = append(offs, blk.Off)
		}
		// blocks at 0 (test, jne), 5 (int3), 6 (lea, ret)
		want := []uint32{0, 5, 6}
		if tls == "initial-exec" {
			want = []uint32{0, 6} // int3's block: no register for the GOT offset
			if len(warnings) != 1 || !strings.Contains(warnings[0], "f: 1 block(s) not counted") || !strings.Contains(warnings[0], "+0x5") {
				t.Errorf("%s: warnings %q, want one naming f+0x5", tls, warnings)
			}
		} else if len(warnings) != 0 {
			t.Errorf("%s: warnings %q", tls, warnings)
		}
		if len(offs) != len(want) {
			t.Fatalf("%s: blocks at %v, want %v", tls, offs, want)
		}
		for i := range want {
			if offs[i] != want[i] {
				t.Errorf("%s: blocks at %v, want %v", tls, offs, want)
				break
			}
		}
	}
}
