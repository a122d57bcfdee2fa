package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"hijack/internal/testutil"
)

// indirectArchives are the static libraries whose indirect jumps
// TestAnalyzeIndirectJumps accounts for: Debian's C library, OpenSSL's
// libcrypto (libssl-dev) and libstdc++ (libstdc++-12-dev).
func indirectArchives() []string {
	libs := []string{"/usr/lib/x86_64-linux-gnu/libc.a", "/usr/lib/x86_64-linux-gnu/libcrypto.a"}
	if out, err := exec.Command("gcc", "-print-file-name=libstdc++.a").Output(); err == nil && filepath.IsAbs(strings.TrimSpace(string(out))) {
		return append(libs, strings.TrimSpace(string(out)))
	}
	return append(libs, "/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a")
}

var (
	objdumpMember  = regexp.MustCompile(`^(\S+):\s+file format `)
	objdumpSection = regexp.MustCompile(`^Disassembly of section (\S+):`)
	objdumpInsn    = regexp.MustCompile(`^\s*([0-9a-f]+):\t(.*)$`)
)

// objdumpJumps returns, for every near indirect jump objdump finds in an
// archive's code, "MEMBER SECTION OFFSET", with how many times it occurs
// (archives may hold several members of one name).
func objdumpJumps(t *testing.T, path string) map[string]int {
	t.Helper()
	out, err := exec.Command("objdump", "-d", "--no-show-raw-insn", path).Output()
	if err != nil {
		t.Fatalf("objdump -d %s: %v", path, err)
	}
	jumps := make(map[string]int)
	member, section := "", ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := objdumpMember.FindStringSubmatch(line); m != nil {
			member = m[1]
			continue
		}
		if m := objdumpSection.FindStringSubmatch(line); m != nil {
			section = m[1]
			continue
		}
		m := objdumpInsn.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f := strings.Fields(m[2])
		for i, w := range f {
			if (w == "jmp" || w == "jmpq") && i+1 < len(f) && strings.HasPrefix(f[i+1], "*") {
				off, _ := strconv.ParseUint(m[1], 16, 64)
				jumps[fmt.Sprintf("%s %s %x", member, section, off)]++
				break
			}
		}
	}
	return jumps
}

// TestAnalyzeIndirectJumps runs `hijack analyze --json` (the code path of
// the command) over libc.a, libcrypto.a and libstdc++.a and checks that
// every near indirect jump objdump finds in them is accounted for: a
// table dispatch ("tables") or listed as unresolved ("unresolved", with
// what it became and why). A jmp * analyze does not list is one the
// presets would treat as neither. It logs the counts per archive; cfg's
// TestVerifyTables checks the resolved tables against their relocations.
func TestAnalyzeIndirectJumps(t *testing.T) {
	testutil.Need(t, "objdump")
	for _, path := range indirectArchives() {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			testutil.NeedFile(t, path)
			start := time.Now()
			var out, errb bytes.Buffer
			if st := run([]string{"analyze", "--json", path}, &out, &errb); st != 0 {
				t.Fatalf("analyze: status %d: %s", st, errb.String())
			}
			var fns []struct {
				Object  string `json:"object"`
				Name    string `json:"name"`
				Section string `json:"section"`
				Tables  []struct {
					Jump uint32 `json:"jump"`
				} `json:"tables"`
				Blocks []struct {
					Start uint32 `json:"start"`
					End   uint32 `json:"end"`
				} `json:"blocks"`
				Unresolved []struct {
					Off      uint32 `json:"offset"`
					TailCall bool   `json:"tail_call"`
					Reason   string `json:"reason"`
				} `json:"unresolved"`
			}
			if err := json.Unmarshal(out.Bytes(), &fns); err != nil {
				t.Fatal(err)
			}
			listed := make(map[string]int)
			code := make(map[string][][2]uint32) // "MEMBER SECTION": the blocks' ranges
			tables, tail, unknown := 0, 0, 0
			for _, f := range fns {
				member := f.Object
				if i := strings.LastIndexByte(member, '('); i >= 0 {
					member = strings.TrimSuffix(member[i+1:], ")")
				}
				for _, b := range f.Blocks {
					k := member + " " + f.Section
					code[k] = append(code[k], [2]uint32{b.Start, b.End})
				}
				for _, jt := range f.Tables {
					tables++
					listed[fmt.Sprintf("%s %s %x", member, f.Section, jt.Jump)]++
				}
				for _, u := range f.Unresolved {
					if u.Reason == "" {
						t.Errorf("%s: %s: unresolved jump at 0x%x without a reason", member, f.Name, u.Off)
					}
					if u.TailCall {
						tail++
					} else {
						unknown++
					}
					listed[fmt.Sprintf("%s %s %x", member, f.Section, u.Off)]++
				}
			}
			analyzed := time.Since(start)
			seen := objdumpJumps(t, path)
			// inCode reports whether objdump's "MEMBER SECTION OFF" is in
			// a block of a function: objdump also decodes the data that
			// hand-written assembly keeps in .text (libcrypto's AES tables
			// hold ff e6, jmp *%rsi), which hijack leaves as data.
			inCode := func(k string) bool {
				i := strings.LastIndexByte(k, ' ')
				off, err := strconv.ParseUint(k[i+1:], 16, 32)
				if err != nil {
					return false
				}
				for _, r := range code[k[:i]] {
					if uint32(off) >= r[0] && uint32(off) < r[1] {
						return true
					}
				}
				return false
			}
			var missing, extra, data []string
			total := 0
			for k, n := range seen {
				total += n
				switch {
				case listed[k] >= n:
				case listed[k] == 0 && !inCode(k):
					data = append(data, k)
				default:
					missing = append(missing, k)
				}
			}
			for k, n := range listed {
				if seen[k] < n {
					extra = append(extra, k)
				}
			}
			slices.Sort(missing)
			slices.Sort(extra)
			for _, k := range missing {
				t.Errorf("objdump's jmp * at %s: analyze lists it neither as a table dispatch nor as unresolved", k)
			}
			for _, k := range extra {
				t.Errorf("analyze lists a jump at %s that objdump does not show as jmp *", k)
			}
			slices.Sort(data)
			t.Logf("%s: %d functions, %d jmp * (objdump): %d jump-table dispatches, %d unresolved (%d as tail calls, %d unknown), %d in data %v; analyze in %v",
				filepath.Base(path), len(fns), total, tables, tail+unknown, tail, unknown, len(data), data, analyzed.Round(time.Millisecond))
		})
	}
}
