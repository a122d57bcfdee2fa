package x86len

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// insnLine is one instruction as printed by objdump.
type insnLine struct {
	off  int64  // offset within the section (or blob)
	text string // disassembly text, e.g. "mov %rax,%rbx" or "(bad)"
}

// isBad reports whether objdump could not decode the instruction.
func (l insnLine) isBad() bool {
	return strings.Contains(l.text, "(bad)") || strings.HasPrefix(l.text, ".byte")
}

// requireTool returns the path of an external tool or skips the test, but
// fails it under CI=true where the environment is expected to be complete.
func requireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missing(t, name+" not found in PATH")
	}
	return p
}

// missing skips locally and fails under CI=true.
func missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (required under CI=true)", what)
	}
	t.Skipf("%s; skipping (set CI=true to make this a failure)", what)
}

// parseObjdump parses `objdump -d --no-show-raw-insn -w` output into
// instruction lines, in output order.
func parseObjdump(out []byte) []insnLine {
	var lines []insnLine
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l, ok := parseLine(sc.Text()); ok {
			lines = append(lines, l)
		}
	}
	return lines
}

// parseLine parses an instruction line such as "  1f:\tmov    %rax,%rbx".
func parseLine(s string) (insnLine, bool) {
	colon := strings.IndexByte(s, ':')
	if colon <= 0 || colon+1 >= len(s) || s[colon+1] != '\t' {
		return insnLine{}, false
	}
	off, err := strconv.ParseInt(strings.TrimSpace(s[:colon]), 16, 64)
	if err != nil {
		return insnLine{}, false
	}
	return insnLine{off: off, text: strings.TrimSpace(s[colon+2:])}, true
}

// objdumpBlob disassembles raw x86-64 bytes.
func objdumpBlob(t testing.TB, blob []byte) []insnLine {
	t.Helper()
	objdump := requireTool(t, "objdump")
	f, err := os.CreateTemp(t.TempDir(), "blob*.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(blob); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return parseObjdump(runObjdump(t, objdump, "-D", "-b", "binary", "-m", "i386:x86-64",
		"--no-show-raw-insn", "-w", f.Name()))
}

// runObjdump runs objdump with stdout sent to a file: objdump writes line by
// line, which is several times slower through a pipe.
func runObjdump(t testing.TB, objdump string, args ...string) []byte {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "objdump*.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(objdump, args...)
	cmd.Stdout, cmd.Stderr = out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("objdump %v: %v\n%s", args, err, stderr.Bytes())
	}
	data, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	return data
}
