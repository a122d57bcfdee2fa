package rewrite_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"hijack/internal/leb128"
	"hijack/internal/objmut"
	"hijack/internal/testutil"
	"hijack/rewrite"
)

// cfiSource is a function with a long call frame program (a frame pointer
// and saved registers), plus what a case adds.
const cfiSource = `
	TOP
	.text
	.globl f
	.type f,@function
f:
	.cfi_startproc
	pushq %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq %rsp, %rbp
	.cfi_def_cfa_register %rbp
	pushq %rbx
	pushq %r12
	.cfi_offset %rbx, -24
	.cfi_offset %r12, -32
	EXTRA
	movl $1, %eax
	popq %r12
	popq %rbx
	popq %rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size f,.-f
`

// patchField overwrites the first field whose name matches re with b.
func patchField(t *testing.T, data []byte, re string, b []byte) []byte {
	t.Helper()
	fs, err := objmut.Fields(data)
	if err != nil {
		t.Fatal(err)
	}
	rx := regexp.MustCompile(re)
	for _, f := range fs {
		if rx.MatchString(f.What) {
			if f.Size == 0 && len(b) > f.N {
				continue
			}
			d := bytes.Clone(data)
			copy(d[f.Off:], b)
			return d
		}
	}
	t.Fatalf("no field matches %s", re)
	return nil
}

// TestBadObjects: corrupt fields the structured mutants found (or that
// belong to the same family) give an error naming the place, or a warning
// where only debug information is concerned; never a panic, a wrong
// object, or an allocation out of proportion.
func TestBadObjects(t *testing.T) {
	dir := t.TempDir()
	asm := func(t *testing.T, name, top, extra string) []byte {
		t.Helper()
		obj := testutil.CompileString(t, dir, "gcc", name+".s", strings.NewReplacer("TOP", top, "EXTRA", extra).Replace(cfiSource))
		d, err := os.ReadFile(obj)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	compile := func(t *testing.T, cc, src string, flags ...string) []byte {
		t.Helper()
		d, err := os.ReadFile(testutil.Compile(t, dir, cc, "../testdata/src/"+src, flags...))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	cxx := func(t *testing.T) []byte { return compile(t, "g++", "cxx.cpp", "-O2") }
	tests := []struct {
		name    string
		data    func(t *testing.T) []byte
		preset  string
		err     string // wanted in the error; "" for success
		warning string // wanted among the warnings on success
		alloc   uint64 // allocation bound, if not the default
	}{
		{
			// DW_CFA_def_cfa_expression of 2^63 bytes: the call frame
			// program walker overflowed its offset (slice bounds out of
			// range).
			name:   "eh_frame expression length 2^63",
			data:   func(t *testing.T) []byte { return asm(t, "cfa", "", ".cfi_escape 0x0f,"+lebList(1<<63)) },
			preset: "pad",
			err:    "section .eh_frame: FDE at 0x18: expression of 0x8000000000000000 bytes beyond the call frame instructions",
		},
		{
			name:   "eh_frame val_expression length 2^64-64",
			data:   func(t *testing.T) []byte { return asm(t, "cfa2", "", ".cfi_escape 0x16,0x03,"+lebList(^uint64(0)-63)) },
			preset: "clobber",
			err:    "expression of 0xffffffffffffffc0 bytes beyond",
		},
		{
			// The same program in .debug_frame: a warning, the rewrite
			// goes on.
			name: "debug_frame expression length 2^63",
			data: func(t *testing.T) []byte {
				return asm(t, "dcfa", ".cfi_sections .debug_frame", ".cfi_escape 0x0f,"+lebList(1<<63))
			},
			preset:  "pad",
			warning: "debug information: section .debug_frame: FDE at 0x18: expression of 0x8000000000000000 bytes beyond the call frame instructions",
		},
		{
			// An augmentation length that wraps the offset back before
			// the record (slice bounds out of range).
			name: "eh_frame augmentation length wraps",
			data: func(t *testing.T) []byte {
				d := asm(t, "aug", "", "")
				fs, _ := objmut.Fields(d)
				for _, f := range fs {
					if strings.HasSuffix(f.What, ".cfa") && f.N >= 9 {
						copy(d[f.Off-1:], leb128.AppendUleb(nil, ^uint64(0)-0x2f, leb128.MaxLen))
						return d
					}
				}
				t.Fatal("no FDE program")
				return nil
			},
			preset: "pad",
			err:    "augmentation data of 0xffffffffffffffd0 bytes beyond the record",
		},
		{
			// A call-site table length of 2^64-1 wrapped the table's end
			// (slice bounds out of range).
			name: "LSDA call-site table length",
			data: func(t *testing.T) []byte {
				return patchField(t, cxx(t), `gcc_except_table.*\.cs_len$`, leb128.AppendUleb(nil, ^uint64(0), leb128.MaxLen))
			},
			preset: "pad",
			err:    "call-site table of 0xffffffffffffffff bytes beyond the LSDA",
		},
		{
			// A type table offset that wraps: the LSDA was rewritten with
			// a garbage offset, silently.
			name: "LSDA type table offset",
			data: func(t *testing.T) []byte {
				return patchField(t, cxx(t), `gcc_except_table.*\.ttype_off$`, leb128.AppendUleb(nil, ^uint64(0)-0x10, leb128.MaxLen))
			},
			preset: "vptrace",
			err:    "outside the LSDA",
		},
		{
			// A compressed debug section whose header claims 1000 times
			// its size inflated to that (a zlib bomb): left alone now.
			name:  "zlib bomb",
			data:  func(t *testing.T) []byte { return zlibBomb(t, dir, asm(t, "bomb", "", "")) },
			alloc: 16 << 20,
		},
		{
			// ch_addralign became sh_addralign when the section was
			// rewritten uncompressed: 3 made the writer fail.
			name: "compression header alignment",
			data: func(t *testing.T) []byte {
				d := compile(t, "gcc", "kitchen.c", "-O2", "-g", "-gz")
				fs, _ := objmut.Fields(d)
				for _, f := range fs {
					if strings.HasSuffix(f.What, "(.debug_line).ch_type") {
						binary.LittleEndian.PutUint64(d[f.Off+16:], 3)
						return d
					}
				}
				t.Fatal("no compressed .debug_line")
				return nil
			},
			warning: "section .debug_line: compression header alignment 0x3 is not a power of two up to 2^32",
		},
	}
	// Names are arbitrary bytes: a newline or a terminal escape in one
	// made a message of several lines (found by FuzzRewritePad and
	// FuzzRewriteVptrace).
	rename := func(t *testing.T, d []byte, sym string, name string) []byte {
		t.Helper()
		i := bytes.Index(d, []byte("\x00"+sym+"\x00"))
		if i < 0 || len(name) != len(sym) {
			t.Fatalf("no name %s of that length", sym)
		}
		copy(d[i+1:], name)
		return d
	}
	tests = append(tests, []struct {
		name    string
		data    func(t *testing.T) []byte
		preset  string
		err     string
		warning string
		alloc   uint64
	}{
		{
			name: "symbol name with a newline in an error",
			data: func(t *testing.T) []byte {
				d := compile(t, "gcc", "kitchen.c", "-O2")
				ef, err := elf.NewFile(bytes.NewReader(d))
				if err != nil {
					t.Fatal(err)
				}
				syms, _ := ef.Symbols()
				k := slices.IndexFunc(syms, func(s elf.Symbol) bool { return s.Name == "average" }) + 1
				d = rename(t, d, "average", "av\ne\x1b[m")
				return patchField(t, d, fmt.Sprintf(`symtab\)\[%d\]\.st_shndx$`, k), []byte{0xf0, 0x0f})
			},
			err: `(av\ne\x1b[m): section index 4080 out of range`,
		},
		{
			name: "function name with a newline in a warning",
			data: func(t *testing.T) []byte {
				// An opcode invalid in 64-bit mode: the section is left
				// alone, with a warning naming the function.
				return rename(t, asm(t, "nl", "", ".byte 0x06"), "f", "\n")
			},
			warning: `section .text: 1 function(s) not instrumented (\n): cannot decode instruction`,
		},
	}...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			preset := tc.preset
			if preset == "" {
				preset = "pad"
			}
			rf := presetRules(t, preset)
			data := tc.data(t)
			limit := tc.alloc
			if limit == 0 {
				limit = 256 << 20
			}
			var warnings []string
			out, ok := checkRewrite(t, tc.name, data, rf, limit)
			if !ok {
				return
			}
			// Again, for the error and the warnings.
			_, _, err := rewrite.Rewrite("bad.o", data, rf, allPresets(), func(w string) { warnings = append(warnings, w) })
			switch {
			case tc.err != "" && out != nil:
				t.Fatalf("rewritten; want an error with %q (warnings %q)", tc.err, warnings)
			case tc.err != "" && !strings.Contains(err.Error(), tc.err):
				t.Fatalf("error %q, want %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.warning != "" && !strings.Contains(strings.Join(warnings, "\n"), tc.warning):
				t.Fatalf("warnings %q lack %q", warnings, tc.warning)
			}
		})
	}
}

// lebList returns v as a padded ULEB128 in .cfi_escape syntax.
func lebList(v uint64) string {
	var s []string
	for _, c := range leb128.AppendUleb(nil, v, leb128.MaxLen) {
		s = append(s, fmt.Sprintf("0x%02x", c))
	}
	return strings.Join(s, ",")
}

// zlibBomb adds to obj a compressed debug section of 64 MiB of zeros (64
// KiB compressed) with objcopy.
func zlibBomb(t *testing.T, dir string, obj []byte) []byte {
	t.Helper()
	testutil.Need(t, "objcopy")
	in, zeros, mid, out := filepath.Join(dir, "bomb-in.o"), filepath.Join(dir, "zeros"), filepath.Join(dir, "bomb-mid.o"), filepath.Join(dir, "bomb.o")
	os.WriteFile(in, obj, 0o644)
	os.WriteFile(zeros, make([]byte, 64<<20), 0o644)
	for _, args := range [][]string{{"--add-section", ".debug_str=" + zeros, in, mid}, {"--compress-debug-sections=zlib", mid, out}} {
		if b, err := exec.Command("objcopy", args...).CombinedOutput(); err != nil {
			t.Fatalf("objcopy %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	os.Remove(zeros)
	os.Remove(mid)
	d, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) > 1<<20 {
		t.Fatalf("compressed object is %d bytes", len(d))
	}
	return d
}
