package abi

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The C side of the ABI (vptrace/runtime/vptrace.h and rt.h) is written by
// hand and checked against this package: TestCLayout compiles a C program
// that includes the headers and prints what the C compiler makes of every
// struct field and constant, and compares it with the Go types and values.
// (Checked rather than generated: vptrace.h is the runtime's public,
// installed header whose prose documents the ABI for C readers, rt.h mixes
// these records with the runtime's private layouts, and the check compares
// what a compiler actually lays out, whoever edited the header.)

// runtimeDir holds rt.h and vptrace.h.
var runtimeDir = filepath.Join("..", "runtime")

// cStructs are the records with their C struct; each Go field's c tag
// names its C field.
var cStructs = []struct {
	c string
	t reflect.Type
}{
	{"vpt_object", reflect.TypeFor[Object]()},
	{"vpt_site", reflect.TypeFor[Site]()},
	{"vpt_event", reflect.TypeFor[Event]()},
	{"vpt_blocks", reflect.TypeFor[Blocks]()},
	{"vpt_block", reflect.TypeFor[Block]()},
}

// vecCheck and dynCheck mark constants that the C side has as field
// accessors (rt.h's VD_* and VPT_DYN_* macros): TestCLayout decodes
// descriptors built in Go with them instead.
const (
	vecCheck = "(VD_* accessors)"
	dynCheck = "(VPT_DYN_* accessors)"
	noC      = "" // the C side has no name for it
)

// cConsts names the C expression of every exported constant of the
// package (TestCConstsComplete keeps the list whole).
var cConsts = []struct {
	name string
	c    string
	v    uint64
}{
	{"Magic", "VPT_OBJ_MAGIC", uint64(Magic)},
	{"Version", "VPTRACE_ABI_VERSION", uint64(Version)},
	{"ObjectSize", "sizeof(struct vpt_object)", ObjectSize},
	{"SiteSize", "sizeof(struct vpt_site)", SiteSize},
	{"EventSize", "VPT_EV_SIZE", EventSize},
	{"MaxSites", "VPT_MAX_SITES", MaxSites},
	{"MaxStrs", "VPT_MAX_STRS", MaxStrs},
	{"MaxSlots", "VPT_MAX_SLOTS", MaxSlots},
	{"MaxObjects", "VPT_MAXOBJ", MaxObjects},
	{"NoSym", "VPT_NOSYM", uint64(NoSym)},
	{"PageShift", noC, PageShift}, // the runtime's shifts by 12
	{"PageSize", noC, PageSize},
	{"FlagIE", "VPT_FLAG_IE", uint64(FlagIE)},
	{"FlagSlotsTPOFF", "VPT_FLAG_SLOTS_TPOFF", uint64(FlagSlotsTPOFF)},
	{"FlagIndirect", "VPT_FLAG_INDIRECT", uint64(FlagIndirect)},
	{"FlagPacked", "VPT_FLAG_PACKED", uint64(FlagPacked)},
	{"FlagSlots", "VPT_FLAG_SLOTS", uint64(FlagSlots)},
	{"FlagEpoch", "VPT_FLAG_EPOCH", uint64(FlagEpoch)},
	{"FlagKinds", "VPT_FLAG_KINDS", uint64(FlagKinds)},
	{"KindRead", "VPT_KIND_READ", uint64(KindRead)},
	{"KindWrite", "VPT_KIND_WRITE", uint64(KindWrite)},
	{"KindRMW", "(VPT_KIND_READ | VPT_KIND_WRITE)", uint64(KindRMW)},
	{"KindExact", "VPT_KIND_EXACT", uint64(KindExact)},
	{"KindDynStep", "VPT_KIND_DYN_STEP", uint64(KindDynStep)},
	{"KindRepSrc", "VPT_KIND_REP_SRC", uint64(KindRepSrc)},
	{"KindRepDest", "VPT_KIND_REP_DEST", uint64(KindRepDest)},
	{"KindRange", "VPT_KIND_RANGE", uint64(KindRange)},
	{"KindVec", "VPT_KIND_VEC", uint64(KindVec)},
	{"SegUnknown", "VPT_SEG_UNKNOWN", uint64(SegUnknown)},
	{"SegGlobal", "VPT_SEG_GLOBAL", uint64(SegGlobal)},
	{"SegStack", "VPT_SEG_STACK", uint64(SegStack)},
	{"SegTLS", "VPT_SEG_TLS", uint64(SegTLS)},
	{"ObjectSitesRelOff", "offsetof(struct vpt_object, sites_rel)", ObjectSitesRelOff},
	{"ObjectStrsRelOff", "offsetof(struct vpt_object, strs_rel)", ObjectStrsRelOff},
	{"ObjectPackedRelOff", "offsetof(struct vpt_object, packed_rel)", ObjectPackedRelOff},
	{"ObjectEpochRelOff", "offsetof(struct vpt_object, epoch_rel)", ObjectEpochRelOff},
	{"SiteKindOff", "VS_KIND", SiteKindOff}, // stubs.S reads it
	{"VecIndexReg", vecCheck, uint64(VecIndexReg)},
	{"VecGather", vecCheck, uint64(VecGather)},
	{"VecScaleShift", vecCheck, VecScaleShift},
	{"VecQwordIndex", vecCheck, uint64(VecQwordIndex)},
	{"VecCountShift", vecCheck, VecCountShift},
	{"VecMaskShift", vecCheck, VecMaskShift},
	{"VecMasked", vecCheck, uint64(VecMasked)},
	{"BlocksMagic", "VPT_BLOCKS_MAGIC", uint64(BlocksMagic)},
	{"BlocksVersion", "VPT_BLOCKS_VERSION", uint64(BlocksVersion)},
	{"BlocksSize", "sizeof(struct vpt_blocks)", BlocksSize},
	{"BlockSize", "sizeof(struct vpt_block)", BlockSize},
	{"MaxBlocks", "VPT_MAX_BLOCKS", MaxBlocks},
	{"BlocksTPOffOff", "offsetof(struct vpt_blocks, tpoff)", BlocksTPOffOff},
	{"BlocksBlocksRelOff", "offsetof(struct vpt_blocks, blocks_rel)", BlocksBlocksRelOff},
	{"BlocksStrsRelOff", "offsetof(struct vpt_blocks, strs_rel)", BlocksStrsRelOff},
	{"ProbeCacheOff", "offsetof(struct vpt_thread, probe)", ProbeCacheOff},
	{"ProbeEpochOff", "offsetof(struct vpt_hot_s, epoch)", ProbeEpochOff},
	{"CacheEntries", "VPT_CACHE", CacheEntries},
	{"CacheSetMask", "VPT_CACHE_SETMASK", CacheSetMask},
}

// TestCConstsComplete: every exported constant the package declares is in
// cConsts (a new one needs its C name, or noC).
func TestCConstsComplete(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var decls []ast.Decl
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		decls = append(decls, f.Decls...)
	}
	listed := map[string]bool{}
	for _, c := range cConsts {
		listed[c.name] = true
	}
	n := 0
	for _, d := range decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			for _, id := range s.(*ast.ValueSpec).Names {
				if !id.IsExported() {
					continue
				}
				n++
				if !listed[id.Name] {
					t.Errorf("constant %s has no entry in cConsts (c_test.go): name its C counterpart", id.Name)
				}
			}
		}
	}
	if n != len(cConsts) {
		t.Errorf("the package declares %d exported constants, cConsts lists %d", n, len(cConsts))
	}
}

// vecSamples and dynSamples are block fields built in Go that the C
// accessors decode.
var (
	vecSamples = []VecDesc{
		Vec(1, true, 2, false, 8, 2, true),
		Vec(15, true, 3, true, 4, 14, true),
		Vec(0, false, 0, false, 8, 7, true),
		Vec(9, true, 1, true, 63, 31, false),
	}
	dynSamples = []uint32{DynStep(5, 8), DynStep(15, -8), DynStep(3, 1<<23-1), DynStep(255, -1<<23), DynStep(0, -1)}
)

// cProgram prints "name value" lines: each struct's size, each field's
// offset, size and signedness, each constant, the decoded samples.
func cProgram() string {
	var b strings.Builder
	b.WriteString("#include <stddef.h>\n#include <stdio.h>\n#include \"rt.h\"\n\n")
	b.WriteString("#define P(name, v) printf(\"%s %lld\\n\", name, (long long)(v))\n")
	b.WriteString("#define SIGNED(x) ((__typeof__(x))-1 < 0)\n\nint main(void)\n{\n")
	for _, s := range cStructs {
		fmt.Fprintf(&b, "\tP(%q, sizeof(struct %s));\n", s.c, s.c)
		for i := range s.t.NumField() {
			f := s.t.Field(i)
			c := f.Tag.Get("c")
			m := fmt.Sprintf("((struct %s *)0)->%s", s.c, c)
			fmt.Fprintf(&b, "\tP(\"%s.%s.off\", offsetof(struct %s, %s));\n", s.c, c, s.c, c)
			fmt.Fprintf(&b, "\tP(\"%s.%s.size\", sizeof(%s));\n", s.c, c, m)
			fmt.Fprintf(&b, "\tP(\"%s.%s.signed\", SIGNED(%s));\n", s.c, c, m)
		}
	}
	for _, c := range cConsts {
		if c.c != noC && c.c != vecCheck && c.c != dynCheck {
			fmt.Fprintf(&b, "\tP(%q, %s);\n", c.name, c.c)
		}
	}
	for i, d := range vecSamples {
		for _, m := range []string{"VD_VIDX", "VD_VSIB", "VD_SCALE", "VD_QIDX", "VD_COUNT", "VD_MREG", "VD_MASK"} {
			fmt.Fprintf(&b, "\tP(\"vec%d.%s\", %s((uint32_t)%#x));\n", i, m, m, uint32(d))
		}
	}
	for i, d := range dynSamples {
		fmt.Fprintf(&b, "\tP(\"dyn%d.reg\", VPT_DYN_REG((uint32_t)%#x));\n", i, d)
		fmt.Fprintf(&b, "\tP(\"dyn%d.mult\", VPT_DYN_MULT((uint32_t)%#x));\n", i, d)
	}
	b.WriteString("\treturn 0;\n}\n")
	return b.String()
}

// cWant is what the C program must print.
func cWant() map[string]int64 {
	want := map[string]int64{}
	for _, s := range cStructs {
		want[s.c] = int64(s.t.Size())
		for i := range s.t.NumField() {
			f := s.t.Field(i)
			key := s.c + "." + f.Tag.Get("c")
			want[key+".off"] = int64(f.Offset)
			want[key+".size"] = int64(f.Type.Size())
			signed := int64(0)
			if f.Type.Kind() >= reflect.Int && f.Type.Kind() <= reflect.Int64 {
				signed = 1
			}
			want[key+".signed"] = signed
		}
	}
	for _, c := range cConsts {
		if c.c != noC && c.c != vecCheck && c.c != dynCheck {
			want[c.name] = int64(c.v)
		}
	}
	b2i := func(b bool) int64 {
		if b {
			return 1
		}
		return 0
	}
	for i, d := range vecSamples {
		p := fmt.Sprintf("vec%d.", i)
		want[p+"VD_VIDX"] = int64(d.IndexReg())
		want[p+"VD_VSIB"] = b2i(d&VecGather != 0)
		want[p+"VD_SCALE"] = int64(d.ScaleLog2())
		want[p+"VD_QIDX"] = b2i(d&VecQwordIndex != 0)
		want[p+"VD_COUNT"] = int64(d.Count())
		want[p+"VD_MREG"] = int64(d.MaskReg())
		want[p+"VD_MASK"] = b2i(d&VecMasked != 0)
	}
	for i, d := range dynSamples {
		reg, mult := DecodeDynStep(d)
		want[fmt.Sprintf("dyn%d.reg", i)] = int64(reg)
		want[fmt.Sprintf("dyn%d.mult", i)] = mult
	}
	return want
}

// TestCLayout compiles cProgram against the runtime's headers with every C
// compiler at hand and compares its output with the Go side.
func TestCLayout(t *testing.T) {
	src := filepath.Join(t.TempDir(), "layout.c")
	if err := os.WriteFile(src, []byte(cProgram()), 0o666); err != nil {
		t.Fatal(err)
	}
	want := cWant()
	ran := 0
	for _, cc := range []string{"gcc", "clang"} {
		if _, err := exec.LookPath(cc); err != nil {
			t.Logf("%s: not installed", cc)
			continue
		}
		ran++
		t.Run(cc, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "layout")
			out, err := exec.Command(cc, "-std=gnu11", "-Wall", "-Werror", "-I", runtimeDir, "-o", bin, src).CombinedOutput()
			if err != nil {
				t.Fatalf("%s layout.c: %v\n%s", cc, err, out)
			}
			out, err = exec.Command(bin).Output()
			if err != nil {
				t.Fatalf("layout: %v", err)
			}
			got := map[string]int64{}
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				name, v, ok := strings.Cut(sc.Text(), " ")
				n, err := strconv.ParseInt(v, 10, 64)
				if !ok || err != nil {
					t.Fatalf("layout printed %q", sc.Text())
				}
				got[name] = n
			}
			for name, w := range want {
				g, ok := got[name]
				switch {
				case !ok:
					t.Errorf("%s: not printed", name)
				case g != w:
					t.Errorf("%s: C %d (%#x), Go %d (%#x)", name, g, g, w, w)
				}
			}
			if len(got) != len(want) {
				t.Errorf("C printed %d values, Go wants %d", len(got), len(want))
			}
		})
	}
	if ran == 0 {
		t.Skip("no C compiler (gcc, clang)")
	}
}

// TestCStructFields: the C structs have no field the Go types lack (a
// field added in C only would pass TestCLayout when it comes last): each
// struct's size is the end of its last Go field, which TestCLayout's size
// line then checks on the C side.
func TestCStructFields(t *testing.T) {
	for _, s := range cStructs {
		last := s.t.Field(s.t.NumField() - 1)
		if end := last.Offset + last.Type.Size(); end != s.t.Size() {
			t.Errorf("%s: last field ends at %d, size %d", s.c, end, s.t.Size())
		}
		for i := range s.t.NumField() {
			if s.t.Field(i).Tag.Get("c") == "" {
				t.Errorf("%s.%s: no c tag", s.t.Name(), s.t.Field(i).Name)
			}
		}
	}
}
