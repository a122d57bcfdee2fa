package x86len

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// unhex turns "48 8b 05 00000000" into bytes; spaces are only for reading.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// decodeTests are hand-checked encodings (against the Intel SDM / AMD APM
// and GNU as), one or more per tricky class. want is Layout.String(),
// which renders every field, so comparing it compares the whole layout.
var decodeTests = []struct {
	name, hex, want string
}{
	// Plain one-byte opcodes, ModRM/SIB/displacement shapes.
	{"nop", "90", "len=1 pfx=0 map=1byte op=90@0"},
	{"ret", "c3", "len=1 pfx=0 map=1byte op=c3@0"},
	{"mov rsp,rbp", "48 89 e5", "len=3 pfx=0 rex=48 map=1byte op=89@1 modrm=e5@2"},
	{"mov rip", "48 8b 05 00000000", "len=7 pfx=0 rex=48 map=1byte op=8b@1 modrm=05@2 disp=4@3 rip"},
	{"mov abs32 via SIB (not rip)", "8b 04 25 78563412", "len=7 pfx=0 map=1byte op=8b@0 modrm=04@1 sib@2 disp=4@3"},
	{"mov 8(rsp)", "8b 44 24 08", "len=4 pfx=0 map=1byte op=8b@0 modrm=44@1 sib@2 disp=1@3"},
	{"mov 0x100(rsp)", "8b 84 24 00010000", "len=7 pfx=0 map=1byte op=8b@0 modrm=84@1 sib@2 disp=4@3"},
	{"mov 0(r13) needs disp8", "41 8b 45 00", "len=4 pfx=0 rex=41 map=1byte op=8b@1 modrm=45@2 disp=1@3"},
	{"mov (r12) needs SIB", "41 8b 04 24", "len=4 pfx=0 rex=41 map=1byte op=8b@1 modrm=04@2 sib@3"},
	{"SIB base=101 mod=00 is disp32 even with REX.B", "43 8b 04 2d 00000000", "len=8 pfx=0 rex=43 map=1byte op=8b@1 modrm=04@2 sib@3 disp=4@4"},
	{"rm=101 mod=00 with REX.B is still rip", "41 8b 05 00000000", "len=7 pfx=0 rex=41 map=1byte op=8b@1 modrm=05@2 disp=4@3 rip"},
	{"67 keeps 32-bit ModRM layout", "67 8b 04 25 00000000", "len=8 pfx=1 map=1byte op=8b@1 modrm=04@2 sib@3 disp=4@4"},
	{"67 rip (eip) relative", "67 8b 05 00000000", "len=7 pfx=1 map=1byte op=8b@1 modrm=05@2 disp=4@3 rip"},
	{"fs canary", "64 48 8b 04 25 28000000", "len=9 pfx=1 rex=48 map=1byte op=8b@2 modrm=04@3 sib@4 disp=4@5"},
	{"movsxd", "48 63 c7", "len=3 pfx=0 rex=48 map=1byte op=63@1 modrm=c7@2"},
	{"mov to ds", "8e d8", "len=2 pfx=0 map=1byte op=8e@0 modrm=d8@1"},

	// Immediates.
	{"add al,ib", "04 01", "len=2 pfx=0 map=1byte op=04@0 imm=1@1"},
	{"add eax,iz", "05 01000000", "len=5 pfx=0 map=1byte op=05@0 imm=4@1"},
	{"add ax,iw", "66 05 0100", "len=4 pfx=1 map=1byte op=05@1 imm=2@2"},
	{"add rax,iz", "48 05 01000000", "len=6 pfx=0 rex=48 map=1byte op=05@1 imm=4@2"},
	{"REX.W beats 66 for iz", "66 48 81 c0 01000000", "len=8 pfx=1 rex=48 map=1byte op=81@2 modrm=c0@3 imm=4@4"},
	{"81 /0 with disp and imm", "81 84 24 10000000 01000000", "len=11 pfx=0 map=1byte op=81@0 modrm=84@1 sib@2 disp=4@3 imm=4@7"},
	{"rip + imm: disp is relative to the end", "c7 05 00000000 01000000", "len=10 pfx=0 map=1byte op=c7@0 modrm=05@1 disp=4@2 imm=4@6 rip"},
	{"83 ib", "48 83 ec 08", "len=4 pfx=0 rex=48 map=1byte op=83@1 modrm=ec@2 imm=1@3"},
	{"push iz", "68 00010000", "len=5 pfx=0 map=1byte op=68@0 imm=4@1"},
	{"pushw iw", "66 68 0001", "len=4 pfx=1 map=1byte op=68@1 imm=2@2"},
	{"imul ib", "6b c0 03", "len=3 pfx=0 map=1byte op=6b@0 modrm=c0@1 imm=1@2"},
	{"imul iz", "69 c0 00010000", "len=6 pfx=0 map=1byte op=69@0 modrm=c0@1 imm=4@2"},
	{"test al,ib", "a8 01", "len=2 pfx=0 map=1byte op=a8@0 imm=1@1"},
	{"test eax,iz", "a9 00010000", "len=5 pfx=0 map=1byte op=a9@0 imm=4@1"},
	{"shl ib", "c1 e0 04", "len=3 pfx=0 map=1byte op=c1@0 modrm=e0@1 imm=1@2"},
	{"ret iw", "c2 0800", "len=3 pfx=0 map=1byte op=c2@0 imm=2@1"},
	{"enter iw,ib is one 3-byte region", "c8 1000 01", "len=4 pfx=0 map=1byte op=c8@0 imm=3@1"},
	{"int ib", "cd 80", "len=2 pfx=0 map=1byte op=cd@0 imm=1@1"},
	{"in al,ib", "e4 60", "len=2 pfx=0 map=1byte op=e4@0 imm=1@1"},
	{"test cl,ib (f6 /0)", "f6 c1 01", "len=3 pfx=0 map=1byte op=f6@0 modrm=c1@1 imm=1@2"},
	{"test alias f6 /1", "f6 c9 01", "len=3 pfx=0 map=1byte op=f6@0 modrm=c9@1 imm=1@2"},
	{"neg al (f6 /3) no imm", "f6 d8", "len=2 pfx=0 map=1byte op=f6@0 modrm=d8@1"},
	{"test ecx,iz (f7 /0)", "f7 c1 00010000", "len=6 pfx=0 map=1byte op=f7@0 modrm=c1@1 imm=4@2"},
	{"test cx,iw", "66 f7 c1 0001", "len=5 pfx=1 map=1byte op=f7@1 modrm=c1@2 imm=2@3"},
	{"testq mem,iz", "48 f7 44 24 08 ffffffff", "len=9 pfx=0 rex=48 map=1byte op=f7@1 modrm=44@2 sib@3 disp=1@4 imm=4@5"},
	{"div ecx (f7 /6) no imm", "f7 f1", "len=2 pfx=0 map=1byte op=f7@0 modrm=f1@1"},
	{"mov r32,imm32", "b8 01000000", "len=5 pfx=0 map=1byte op=b8@0 imm=4@1"},
	{"mov r16,imm16", "66 b8 0100", "len=4 pfx=1 map=1byte op=b8@1 imm=2@2"},
	{"movabs imm64", "48 b8 8877665544332211", "len=10 pfx=0 rex=48 map=1byte op=b8@1 imm=8@2"},
	{"REX.W beats 66 for b8", "66 49 bb 8877665544332211", "len=11 pfx=1 rex=49 map=1byte op=bb@2 imm=8@3"},
	{"mov r8b,ib", "41 b0 01", "len=3 pfx=0 rex=41 map=1byte op=b0@1 imm=1@2"},
	{"mov mem,imm32", "c7 00 01000000", "len=6 pfx=0 map=1byte op=c7@0 modrm=00@1 imm=4@2"},
	{"movw mem,imm16", "66 c7 00 0100", "len=5 pfx=1 map=1byte op=c7@1 modrm=00@2 imm=2@3"},
	{"movb mem,ib", "c6 00 01", "len=3 pfx=0 map=1byte op=c6@0 modrm=00@1 imm=1@2"},

	// moffs: 8-byte addresses (4 with 67), reported as displacement.
	{"movabs al,moffs", "a0 8877665544332211", "len=9 pfx=0 map=1byte op=a0@0 disp=8@1"},
	{"movabs rax,moffs", "48 a1 8877665544332211", "len=10 pfx=0 rex=48 map=1byte op=a1@1 disp=8@2"},
	{"moffs ax (66 does not shrink the address)", "66 a3 8877665544332211", "len=10 pfx=1 map=1byte op=a3@1 disp=8@2"},
	{"moffs32 with 67", "67 a0 44332211", "len=6 pfx=1 map=1byte op=a0@1 disp=4@2"},
	{"fs moffs", "64 48 a1 2800000000000000", "len=11 pfx=1 rex=48 map=1byte op=a1@2 disp=8@3"},

	// Branches.
	{"call rel32", "e8 00000000", "len=5 pfx=0 map=1byte op=e8@0 rel=4@1"},
	{"66 call stays rel32", "66 e8 00000000", "len=6 pfx=1 map=1byte op=e8@1 rel=4@2"},
	{"66 jmp stays rel32", "66 e9 00000000", "len=6 pfx=1 map=1byte op=e9@1 rel=4@2"},
	{"jmp rel8", "eb 05", "len=2 pfx=0 map=1byte op=eb@0 rel=1@1"},
	{"je rel8", "74 05", "len=2 pfx=0 map=1byte op=74@0 rel=1@1"},
	{"je rel32", "0f 84 00000000", "len=6 pfx=0 map=0f op=84@1 rel=4@2"},
	{"66 jcc stays rel32", "66 0f 84 00000000", "len=7 pfx=1 map=0f op=84@2 rel=4@3"},
	{"jrcxz", "e3 05", "len=2 pfx=0 map=1byte op=e3@0 rel=1@1"},
	{"jecxz", "67 e3 05", "len=3 pfx=1 map=1byte op=e3@1 rel=1@2"},
	{"loop", "e2 fe", "len=2 pfx=0 map=1byte op=e2@0 rel=1@1"},
	{"loopne", "e0 fe", "len=2 pfx=0 map=1byte op=e0@0 rel=1@1"},
	{"loope", "e1 fe", "len=2 pfx=0 map=1byte op=e1@0 rel=1@1"},
	{"bnd call", "f2 e8 00000000", "len=6 pfx=1 map=1byte op=e8@1 rel=4@2"},
	{"bnd ret", "f2 c3", "len=2 pfx=1 map=1byte op=c3@1"},
	{"repz ret", "f3 c3", "len=2 pfx=1 map=1byte op=c3@1"},
	{"branch hint", "2e 74 05", "len=3 pfx=1 map=1byte op=74@1 rel=1@2"},
	{"notrack jmp", "3e ff e0", "len=3 pfx=1 map=1byte op=ff@1 modrm=e0@2"},
	{"notrack jmp table", "3e ff 24 c5 00000000", "len=8 pfx=1 map=1byte op=ff@1 modrm=24@2 sib@3 disp=4@4"},
	{"call *rip", "ff 15 00000000", "len=6 pfx=0 map=1byte op=ff@0 modrm=15@1 disp=4@2 rip"},
	{"TLS GD call", "66 66 48 e8 00000000", "len=8 pfx=2 rex=48 map=1byte op=e8@3 rel=4@4"},
	{"xbegin rel32", "c7 f8 00000000", "len=6 pfx=0 map=1byte op=c7@0 modrm=f8@1 rel=4@2"},
	{"xbegin rel16", "66 c7 f8 0000", "len=5 pfx=1 map=1byte op=c7@1 modrm=f8@2 rel=2@3"},
	{"xabort", "c6 f8 ff", "len=3 pfx=0 map=1byte op=c6@0 modrm=f8@1 imm=1@2"},

	// Prefix handling.
	{"nop padding", "66 66 2e 0f 1f 84 00 00000000", "len=11 pfx=3 map=0f op=1f@4 modrm=84@5 sib@6 disp=4@7"},
	{"many 66 (14 prefixes, 15 bytes)", "66666666666666666666666666 2e 90", "len=15 pfx=14 map=1byte op=90@14"},
	{"lock cmpxchg", "f0 48 0f b1 0a", "len=5 pfx=1 rex=48 map=0f op=b1@3 modrm=0a@4"},
	{"dead REX before a prefix", "48 66 90", "len=3 pfx=2 map=1byte op=90@2"},
	{"second REX wins", "40 48 89 e5", "len=4 pfx=1 rex=48 map=1byte op=89@2 modrm=e5@3"},
	{"rep movsb", "f3 a4", "len=2 pfx=1 map=1byte op=a4@1"},
	{"fwait is its own instruction", "9b df e0", "len=1 pfx=0 map=1byte op=9b@0"},

	// 0f map.
	{"nopl", "0f 1f 44 00 00", "len=5 pfx=0 map=0f op=1f@1 modrm=44@2 sib@3 disp=1@4"},
	{"nopw rip", "66 0f 1f 05 00000000", "len=8 pfx=1 map=0f op=1f@2 modrm=05@3 disp=4@4 rip"},
	{"endbr64", "f3 0f 1e fa", "len=4 pfx=1 map=0f op=1e@2 modrm=fa@3"},
	{"endbr32", "f3 0f 1e fb", "len=4 pfx=1 map=0f op=1e@2 modrm=fb@3"},
	{"rdsspq", "f3 48 0f 1e c8", "len=5 pfx=1 rex=48 map=0f op=1e@3 modrm=c8@4"},
	{"prefetcht0", "0f 18 08", "len=3 pfx=0 map=0f op=18@1 modrm=08@2"},
	{"prefetchw", "0f 0d 08", "len=3 pfx=0 map=0f op=0d@1 modrm=08@2"},
	{"syscall", "0f 05", "len=2 pfx=0 map=0f op=05@1"},
	{"ud2", "0f 0b", "len=2 pfx=0 map=0f op=0b@1"},
	{"ud1", "0f b9 c0", "len=3 pfx=0 map=0f op=b9@1 modrm=c0@2"},
	{"ud0", "0f ff c0", "len=3 pfx=0 map=0f op=ff@1 modrm=c0@2"},
	{"rdtsc", "0f 31", "len=2 pfx=0 map=0f op=31@1"},
	{"cpuid", "0f a2", "len=2 pfx=0 map=0f op=a2@1"},
	{"xgetbv", "0f 01 d0", "len=3 pfx=0 map=0f op=01@1 modrm=d0@2"},
	{"swapgs", "0f 01 f8", "len=3 pfx=0 map=0f op=01@1 modrm=f8@2"},
	{"rdtscp", "0f 01 f9", "len=3 pfx=0 map=0f op=01@1 modrm=f9@2"},
	{"rdpkru", "0f 01 ee", "len=3 pfx=0 map=0f op=01@1 modrm=ee@2"},
	{"wrpkru", "0f 01 ef", "len=3 pfx=0 map=0f op=01@1 modrm=ef@2"},
	{"clac", "0f 01 ca", "len=3 pfx=0 map=0f op=01@1 modrm=ca@2"},
	{"stac", "0f 01 cb", "len=3 pfx=0 map=0f op=01@1 modrm=cb@2"},
	{"lgdt rip", "0f 01 15 00000000", "len=7 pfx=0 map=0f op=01@1 modrm=15@2 disp=4@3 rip"},
	{"mov cr: mod is ignored, no disp", "0f 20 05", "len=3 pfx=0 map=0f op=20@1 modrm=05@2"},
	{"mov dr: mod is ignored, no SIB", "0f 23 04", "len=3 pfx=0 map=0f op=23@1 modrm=04@2"},
	{"bt ib", "0f ba e0 05", "len=4 pfx=0 map=0f op=ba@1 modrm=e0@2 imm=1@3"},
	{"shld ib", "0f a4 c2 04", "len=4 pfx=0 map=0f op=a4@1 modrm=c2@2 imm=1@3"},
	{"shrd ib", "48 0f ac c2 04", "len=5 pfx=0 rex=48 map=0f op=ac@2 modrm=c2@3 imm=1@4"},
	{"shld cl no imm", "0f a5 c2", "len=3 pfx=0 map=0f op=a5@1 modrm=c2@2"},
	{"pshufd ib", "66 0f 70 c1 1b", "len=5 pfx=1 map=0f op=70@2 modrm=c1@3 imm=1@4"},
	{"psrlq ib", "66 0f 73 d0 04", "len=5 pfx=1 map=0f op=73@2 modrm=d0@3 imm=1@4"},
	{"cmpps ib", "0f c2 c1 00", "len=4 pfx=0 map=0f op=c2@1 modrm=c1@2 imm=1@3"},
	{"pinsrw ib", "66 0f c4 c1 03", "len=5 pfx=1 map=0f op=c4@2 modrm=c1@3 imm=1@4"},
	{"pextrw ib", "66 0f c5 c1 03", "len=5 pfx=1 map=0f op=c5@2 modrm=c1@3 imm=1@4"},
	{"shufps ib", "0f c6 c1 44", "len=4 pfx=0 map=0f op=c6@1 modrm=c1@2 imm=1@3"},
	{"cmpxchg16b", "48 0f c7 0f", "len=4 pfx=0 rex=48 map=0f op=c7@2 modrm=0f@3"},
	{"rdrand", "0f c7 f0", "len=3 pfx=0 map=0f op=c7@1 modrm=f0@2"},
	{"bswap", "41 0f c8", "len=3 pfx=0 rex=41 map=0f op=c8@2"},
	{"popcnt", "f3 0f b8 c1", "len=4 pfx=1 map=0f op=b8@2 modrm=c1@3"},
	{"tzcnt", "f3 48 0f bc c1", "len=5 pfx=1 rex=48 map=0f op=bc@3 modrm=c1@4"},
	{"lzcnt", "f3 0f bd c1", "len=4 pfx=1 map=0f op=bd@2 modrm=c1@3"},
	{"mfence", "0f ae f0", "len=3 pfx=0 map=0f op=ae@1 modrm=f0@2"},
	{"rdfsbase", "f3 48 0f ae c0", "len=5 pfx=1 rex=48 map=0f op=ae@3 modrm=c0@4"},
	{"fxsave rip", "0f ae 05 00000000", "len=7 pfx=0 map=0f op=ae@1 modrm=05@2 disp=4@3 rip"},
	{"setcc", "0f 94 c0", "len=3 pfx=0 map=0f op=94@1 modrm=c0@2"},
	{"cmov", "48 0f 44 c1", "len=4 pfx=0 rex=48 map=0f op=44@2 modrm=c1@3"},
	{"vmread: 0f 78 without prefix has no imm", "0f 78 c8", "len=3 pfx=0 map=0f op=78@1 modrm=c8@2"},
	{"extrq ib,ib", "66 0f 78 c0 08 10", "len=6 pfx=1 map=0f op=78@2 modrm=c0@3 imm=2@4"},
	{"insertq ib,ib", "f2 0f 78 c1 08 10", "len=6 pfx=1 map=0f op=78@2 modrm=c1@3 imm=2@4"},
	{"extrq reg", "66 0f 79 c1", "len=4 pfx=1 map=0f op=79@2 modrm=c1@3"},
	{"insertq reg", "f2 0f 79 c1", "len=4 pfx=1 map=0f op=79@2 modrm=c1@3"},
	{"padlock xsha512", "f3 0f a6 e0", "len=4 pfx=1 map=0f op=a6@2 modrm=e0@3"},
	{"padlock xcrypt-cbc", "f3 0f a7 d0", "len=4 pfx=1 map=0f op=a7@2 modrm=d0@3"},

	// 3DNow!: the suffix byte is reported by SuffixOff.
	{"pfmul", "0f 0f c1 b4", "len=4 pfx=0 map=3dnow op=0f@1 modrm=c1@2 suffix@3"},
	{"pfadd rip", "0f 0f 05 00000000 9e", "len=8 pfx=0 map=3dnow op=0f@1 modrm=05@2 disp=4@3 suffix@7 rip"},
	{"femms", "0f 0e", "len=2 pfx=0 map=0f op=0e@1"},

	// 0f 38 and 0f 3a.
	{"pshufb", "66 0f 38 00 c1", "len=5 pfx=1 map=0f38 op=00@3 modrm=c1@4"},
	{"adcx", "66 0f 38 f6 c1", "len=5 pfx=1 map=0f38 op=f6@3 modrm=c1@4"},
	{"adox", "f3 0f 38 f6 c1", "len=5 pfx=1 map=0f38 op=f6@3 modrm=c1@4"},
	{"adcx 64", "66 48 0f 38 f6 c1", "len=6 pfx=1 rex=48 map=0f38 op=f6@4 modrm=c1@5"},
	{"crc32b", "f2 0f 38 f0 c1", "len=5 pfx=1 map=0f38 op=f0@3 modrm=c1@4"},
	{"crc32q", "f2 48 0f 38 f1 c1", "len=6 pfx=1 rex=48 map=0f38 op=f1@4 modrm=c1@5"},
	{"movbe load", "0f 38 f0 07", "len=4 pfx=0 map=0f38 op=f0@2 modrm=07@3"},
	{"movbe 16 store", "66 0f 38 f1 07", "len=5 pfx=1 map=0f38 op=f1@3 modrm=07@4"},
	{"sha256rnds2", "0f 38 cb c1", "len=4 pfx=0 map=0f38 op=cb@2 modrm=c1@3"},
	{"aesenc rip", "66 0f 38 dc 05 00000000", "len=9 pfx=1 map=0f38 op=dc@3 modrm=05@4 disp=4@5 rip"},
	{"palignr", "66 0f 3a 0f c1 08", "len=6 pfx=1 map=0f3a op=0f@3 modrm=c1@4 imm=1@5"},
	{"pclmulqdq rip", "66 0f 3a 44 05 00000000 11", "len=10 pfx=1 map=0f3a op=44@3 modrm=05@4 disp=4@5 imm=1@9 rip"},
	{"sha1rnds4", "0f 3a cc c1 01", "len=5 pfx=0 map=0f3a op=cc@2 modrm=c1@3 imm=1@4"},

	// x87.
	{"fldz", "d9 ee", "len=2 pfx=0 map=1byte op=d9@0 modrm=ee@1"},
	{"fldl rip", "dd 05 00000000", "len=6 pfx=0 map=1byte op=dd@0 modrm=05@1 disp=4@2 rip"},
	{"fnstsw ax", "df e0", "len=2 pfx=0 map=1byte op=df@0 modrm=e0@1"},

	// VEX.
	{"vzeroupper (no ModRM)", "c5 f8 77", "len=3 pfx=0 esc=vex2 map=0f op=77@2"},
	{"vzeroall (no ModRM)", "c5 fc 77", "len=3 pfx=0 esc=vex2 map=0f op=77@2"},
	{"vzeroupper vex3", "c4 e1 78 77", "len=4 pfx=0 esc=vex3 map=0f op=77@3"},
	{"vmovdqu rip", "c5 fa 6f 05 00000000", "len=8 pfx=0 esc=vex2 map=0f op=6f@2 modrm=05@3 disp=4@4 rip"},
	{"vpshufd ib", "c5 fd 70 c1 1b", "len=5 pfx=0 esc=vex2 map=0f op=70@2 modrm=c1@3 imm=1@4"},
	{"vpsrldq ib", "c5 f1 73 d8 04", "len=5 pfx=0 esc=vex2 map=0f op=73@2 modrm=d8@3 imm=1@4"},
	{"vcmpps ib", "c5 f8 c2 c1 00", "len=5 pfx=0 esc=vex2 map=0f op=c2@2 modrm=c1@3 imm=1@4"},
	{"vshufps ib", "c5 f8 c6 c1 44", "len=5 pfx=0 esc=vex2 map=0f op=c6@2 modrm=c1@3 imm=1@4"},
	{"vpinsrw ib", "c5 f1 c4 c0 03", "len=5 pfx=0 esc=vex2 map=0f op=c4@2 modrm=c0@3 imm=1@4"},
	{"vpextrw ib", "c5 f9 c5 c1 03", "len=5 pfx=0 esc=vex2 map=0f op=c5@2 modrm=c1@3 imm=1@4"},
	{"vpalignr (0f3a)", "c4 e3 79 0f c1 08", "len=6 pfx=0 esc=vex3 map=0f3a op=0f@3 modrm=c1@4 imm=1@5"},
	{"vpextrd (0f3a)", "c4 e3 79 16 c8 01", "len=6 pfx=0 esc=vex3 map=0f3a op=16@3 modrm=c8@4 imm=1@5"},
	{"vpinsrq (0f3a)", "c4 e3 f9 22 c0 01", "len=6 pfx=0 esc=vex3 map=0f3a op=22@3 modrm=c0@4 imm=1@5"},
	{"vblendvps is4", "c4 e3 79 4a c2 30", "len=6 pfx=0 esc=vex3 map=0f3a op=4a@3 modrm=c2@4 imm=1@5"},
	{"vpblendvb is4 mem", "c4 e3 79 4c 00 30", "len=6 pfx=0 esc=vex3 map=0f3a op=4c@3 modrm=00@4 imm=1@5"},
	{"FMA4 vfmaddsubps is4", "c4 e3 f9 5c c2 30", "len=6 pfx=0 esc=vex3 map=0f3a op=5c@3 modrm=c2@4 imm=1@5"},
	{"FMA4 vfmaddss rip", "c4 e3 79 6a 05 00000000 20", "len=10 pfx=0 esc=vex3 map=0f3a op=6a@3 modrm=05@4 disp=4@5 imm=1@9 rip"},
	{"vbroadcastss rip (0f38)", "c4 e2 79 18 05 00000000", "len=9 pfx=0 esc=vex3 map=0f38 op=18@3 modrm=05@4 disp=4@5 rip"},
	{"vfmadd231ps (0f38)", "c4 e2 71 b8 c2", "len=5 pfx=0 esc=vex3 map=0f38 op=b8@3 modrm=c2@4"},
	{"vpgatherdd VSIB", "c4 e2 75 90 04 90", "len=6 pfx=0 esc=vex3 map=0f38 op=90@3 modrm=04@4 sib@5"},
	{"andn (BMI, VEX 0f38)", "c4 e2 70 f2 c2", "len=5 pfx=0 esc=vex3 map=0f38 op=f2@3 modrm=c2@4"},
	{"rorx ib (VEX 0f3a)", "c4 e3 7b f0 c1 05", "len=6 pfx=0 esc=vex3 map=0f3a op=f0@3 modrm=c1@4 imm=1@5"},
	{"kmovw (VEX 0f)", "c5 f8 90 c1", "len=4 pfx=0 esc=vex2 map=0f op=90@2 modrm=c1@3"},
	{"67-prefixed VEX", "67 c5 fa 6f 00", "len=5 pfx=1 esc=vex2 map=0f op=6f@3 modrm=00@4"},
	{"3e-prefixed VEX", "3e c5 f8 10 00", "len=5 pfx=1 esc=vex2 map=0f op=10@3 modrm=00@4"},
	{"urdmsr (VEX map 7, imm32)", "c4 e7 7b f8 c0 78563412", "len=9 pfx=0 esc=vex3 map=map7 op=f8@3 modrm=c0@4 imm=4@5"},

	// EVEX.
	{"vmovups zmm rip", "62 f1 7c 48 10 05 00000000", "len=10 pfx=0 esc=evex map=0f op=10@4 modrm=05@5 disp=4@6 rip"},
	{"vpshufd zmm ib", "62 f1 7d 48 70 c1 1b", "len=7 pfx=0 esc=evex map=0f op=70@4 modrm=c1@5 imm=1@6"},
	{"vpalignr zmm (0f3a)", "62 f3 7d 48 0f c1 08", "len=7 pfx=0 esc=evex map=0f3a op=0f@4 modrm=c1@5 imm=1@6"},
	{"vbroadcastss disp8*N", "62 f2 7d 48 18 40 01", "len=7 pfx=0 esc=evex map=0f38 op=18@4 modrm=40@5 disp=1@6"},
	{"vpternlogd ib", "62 f3 75 48 25 c2 96", "len=7 pfx=0 esc=evex map=0f3a op=25@4 modrm=c2@5 imm=1@6"},
	{"vaddph (map 5)", "62 f5 7c 48 58 c1", "len=6 pfx=0 esc=evex map=map5 op=58@4 modrm=c1@5"},
	{"vfmadd132ph (map 6)", "62 f6 7d 48 98 c1", "len=6 pfx=0 esc=evex map=map6 op=98@4 modrm=c1@5"},
	{"vcmpph (0f3a, FP16)", "62 f3 7c 48 c2 c1 00", "len=7 pfx=0 esc=evex map=0f3a op=c2@4 modrm=c1@5 imm=1@6"},
	{"67-prefixed EVEX", "67 62 f1 7c 48 10 00", "len=7 pfx=1 esc=evex map=0f op=10@5 modrm=00@6"},

	// XOP.
	{"vprotb ib (map 8)", "8f e8 78 c0 c1 05", "len=6 pfx=0 esc=xop map=xop8 op=c0@3 modrm=c1@4 imm=1@5"},
	{"vpcmov is4 (map 8)", "8f e8 78 a2 c2 30", "len=6 pfx=0 esc=xop map=xop8 op=a2@3 modrm=c2@4 imm=1@5"},
	{"vfrczps (map 9)", "8f e9 78 80 c1", "len=5 pfx=0 esc=xop map=xop9 op=80@3 modrm=c1@4"},
	{"vprotd rip (map 9)", "8f e9 78 92 05 00000000", "len=9 pfx=0 esc=xop map=xop9 op=92@3 modrm=05@4 disp=4@5 rip"},
	{"bextr imm32 (map 10)", "8f ea 78 10 c1 04030201", "len=9 pfx=0 esc=xop map=xop10 op=10@3 modrm=c1@4 imm=4@5"},
	{"pop rax (8f /0)", "8f c0", "len=2 pfx=0 map=1byte op=8f@0 modrm=c0@1"},
	{"pop mem (8f /0)", "8f 05 00000000", "len=6 pfx=0 map=1byte op=8f@0 modrm=05@1 disp=4@2 rip"},

	// APX REX2.
	{"push r16", "d5 10 50", "len=3 pfx=0 esc=rex2 map=1byte op=50@2"},
	{"lea rip into r16", "d5 48 8d 05 00000000", "len=8 pfx=0 esc=rex2 map=1byte op=8d@2 modrm=05@3 disp=4@4 rip"},
	{"mov r20,imm32", "d5 18 c7 c4 00000000", "len=8 pfx=0 esc=rex2 map=1byte op=c7@2 modrm=c4@3 imm=4@4"},
	{"movabs r16 imm64 (REX2.W)", "d5 18 b8 8877665544332211", "len=11 pfx=0 esc=rex2 map=1byte op=b8@2 imm=8@3"},
	{"REX2 map 1 (M0)", "d5 c0 af c0", "len=4 pfx=0 esc=rex2 map=0f op=af@2 modrm=c0@3"},
	{"jmpabs", "d5 00 a1 8877665544332211", "len=11 pfx=0 esc=rex2 map=1byte op=a1@2 imm=8@3"},
	{"66 before REX2", "66 d5 10 89 c0", "len=5 pfx=1 esc=rex2 map=1byte op=89@3 modrm=c0@4"},
}

func TestDecode(t *testing.T) {
	for _, tc := range decodeTests {
		b := unhex(t, tc.hex)
		l, err := Decode(b)
		if err != nil {
			t.Errorf("%s [% x]: unexpected error %v", tc.name, b, err)
			continue
		}
		if got := l.String(); got != tc.want {
			t.Errorf("%s [% x]:\n got  %s\n want %s", tc.name, b, got, tc.want)
		}
		if msg := checkLayout(b, l); msg != "" {
			t.Errorf("%s [% x]: %s", tc.name, b, msg)
		}
		// Trailing bytes never change the result.
		l2, err := Decode(append(append([]byte{}, b...), 0x90, 0x90, 0x90))
		if err != nil || l2 != l {
			t.Errorf("%s [% x]: with trailing bytes got %v, %v", tc.name, b, l2, err)
		}
		// Every proper prefix of the instruction is truncated.
		for n := 0; n < int(l.Len); n++ {
			if _, err := Decode(b[:n]); err != ErrTruncated {
				t.Errorf("%s [% x]: Decode of first %d bytes: got %v, want ErrTruncated", tc.name, b, n, err)
			}
		}
	}
}

var errorTests = []struct {
	name, hex string
	want      error
}{
	{"empty", "", ErrTruncated},
	{"prefix only", "66", ErrTruncated},
	{"REX only", "48", ErrTruncated},
	{"0f only", "0f", ErrTruncated},
	{"short rel32", "e8 0000", ErrTruncated},
	{"missing SIB", "8b 04", ErrTruncated},
	{"short VEX", "c5 f8", ErrTruncated},
	{"short EVEX", "62 f1 7c", ErrTruncated},

	{"push es", "06", ErrInvalid},
	{"pop es", "07", ErrInvalid},
	{"push cs", "0e", ErrInvalid},
	{"push ss", "16", ErrInvalid},
	{"pop ss", "17", ErrInvalid},
	{"push ds", "1e", ErrInvalid},
	{"pop ds", "1f", ErrInvalid},
	{"daa", "27", ErrInvalid},
	{"das", "2f", ErrInvalid},
	{"aaa", "37", ErrInvalid},
	{"aas", "3f", ErrInvalid},
	{"pusha", "60", ErrInvalid},
	{"popa", "61", ErrInvalid},
	{"82 alias", "82 c0 01", ErrInvalid},
	{"far call", "9a 00000000 0000", ErrInvalid},
	{"into", "ce", ErrInvalid},
	{"aam", "d4 0a", ErrInvalid},
	{"salc", "d6", ErrInvalid},
	{"far jmp", "ea 00000000 0000", ErrInvalid},
	{"inc/dec byte /2", "fe d0", ErrInvalid},
	{"ff /7", "ff f8", ErrInvalid},
	{"c6 /1", "c6 c8 00", ErrInvalid},
	{"c7 /7 not f8", "c7 f9 00000000", ErrInvalid},
	{"pop /4 (8f e0: map field 0)", "8f e0", ErrInvalid},
	{"jmpe", "0f b8 c0", ErrInvalid},
	{"0f 04", "0f 04", ErrInvalid},
	{"mov tr", "0f 24 c0", ErrInvalid},
	{"0f 78 with f3", "f3 0f 78 c0 00 00", ErrInvalid},
	{"padlock mem form", "0f a6 00", ErrInvalid},
	{"bad 3DNow suffix", "0f 0f c1 00", ErrInvalid},
	{"undefined 0f 38", "66 0f 38 50 c1", ErrInvalid},
	{"undefined 0f 3a", "66 0f 3a 00 c1 00", ErrInvalid},
	{"66 VEX", "66 c5 f8 77", ErrInvalid},
	{"f3 VEX", "f3 c4 e1 78 77", ErrInvalid},
	{"f0 VEX", "f0 c5 f8 10 00", ErrInvalid},
	{"REX VEX", "48 c5 f8 77", ErrInvalid},
	{"REX EVEX", "48 62 f1 7c 48 10 00", ErrInvalid},
	{"66 XOP", "66 8f e9 78 80 c1", ErrInvalid},
	{"VEX map 0", "c4 e0 78 10 c0", ErrInvalid},
	{"VEX map 4", "c4 e4 78 10 c0", ErrInvalid},
	{"EVEX map 0", "62 f0 7c 48 10 c0", ErrInvalid},
	{"EVEX vzeroupper", "62 f1 7c 48 77", ErrInvalid},
	{"EVEX map 4 (APX)", "62 f4 7c 08 01 c1", ErrUnsupported},
	{"XOP map 11", "8f eb 78 10 c1", ErrInvalid},
	{"REX before REX2", "48 d5 10 50", ErrInvalid},
	{"jcc under REX2", "d5 00 74 00", ErrInvalid},
	{"0f 38 under REX2", "d5 80 38 00 c0", ErrInvalid},
	{"prefix after REX2", "d5 10 66 90", ErrInvalid},

	{"16 bytes of prefixes", "66666666666666666666666666666666 90", ErrTooLong},
	{"15 prefixes + opcode", "666666666666666666666666666666 90", ErrTooLong},
	{"11 prefixes + 7-byte mov", "6666666666666666666666 48 c7 c0 01000000", ErrTooLong},
	{"too long even if truncated", "66666666666666666666666666 48 b8", ErrTooLong},
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range errorTests {
		b := unhex(t, tc.hex)
		l, err := Decode(b)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s [% x]: got %v (%v), want %v", tc.name, b, err, l, tc.want)
		}
		if err != nil && l != (Layout{}) {
			t.Errorf("%s: non-zero layout with error: %v", tc.name, l)
		}
	}
}

// TestX86asmMisdecodes pins the encodings golang.org/x/arch/x86/x86asm
// gets wrong (see DESIGN.md, Decoding): Decode must handle each one.
func TestX86asmMisdecodes(t *testing.T) {
	for _, tc := range []struct {
		hex string
		len int
	}{
		{"f3 0f 1e fa", 4},                 // endbr64
		{"f3 0f 1e fb", 4},                 // endbr32
		{"66 0f 38 f6 c1", 5},              // adcx
		{"f3 0f 38 f6 c1", 5},              // adox
		{"67 c5 fa 6f 00", 5},              // 67-prefixed VEX
		{"3e c5 f8 10 00", 5},              // 3e-prefixed VEX
		{"c5 f8 77", 3},                    // vzeroupper
		{"c5 fc 77", 3},                    // vzeroall
		{"c4 e3 f9 5c c2 30", 6},           // FMA4
		{"8f e8 78 c0 c1 05", 6},           // XOP
		{"0f 01 ee", 3},                    // rdpkru
		{"0f 01 ef", 3},                    // wrpkru
		{"62 f1 7c 48 10 05 00000000", 10}, // EVEX rip-relative
	} {
		b := unhex(t, tc.hex)
		l, err := Decode(b)
		if err != nil || int(l.Len) != tc.len {
			t.Errorf("[% x]: got len %d, %v; want %d", b, l.Len, err, tc.len)
		}
	}
	// VEX/EVEX RIP-relative operands must be flagged.
	for _, h := range []string{"c5 fa 6f 05 00000000", "62 f1 7c 48 10 05 00000000", "8f e9 78 92 05 00000000"} {
		if l, err := Decode(unhex(t, h)); err != nil || !l.RIPRelative {
			t.Errorf("[%s]: RIPRelative=%v err=%v", h, l.RIPRelative, err)
		}
	}
}

// TestDecodeNoAlloc guards the hot path.
func TestDecodeNoAlloc(t *testing.T) {
	b := unhex(t, "66 66 2e 0f 1f 84 00 00000000")
	if n := testing.AllocsPerRun(1000, func() { _, _ = Decode(b) }); n != 0 {
		t.Errorf("Decode allocates %v times per call", n)
	}
	bad := unhex(t, "06")
	if n := testing.AllocsPerRun(1000, func() { _, _ = Decode(bad) }); n != 0 {
		t.Errorf("Decode allocates %v times per failing call", n)
	}
}
