// Package testutil helps tests build real objects with the system
// toolchain: compile C, C++ and assembly sources, run programs, and skip
// (or, under CI, fail) when a tool is missing.
package testutil

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// CI reports whether the tests run under CI (env CI=true), where a missing
// tool is a failure rather than a reason to skip.
func CI() bool { return os.Getenv("CI") == "true" }

// Need skips the test (fails it under CI) unless every tool is on PATH.
func Need(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if CI() {
				t.Fatalf("%s is not installed (run scripts/deps.sh)", tool)
			}
			t.Skipf("%s is not installed (run scripts/deps.sh)", tool)
		}
	}
}

// NeedFile skips (fails under CI) unless path exists.
func NeedFile(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if CI() {
			t.Fatalf("%s is missing (run scripts/deps.sh)", path)
		}
		t.Skipf("%s is missing (run scripts/deps.sh)", path)
	}
}

// Compile compiles one source (C, C++ or assembly, by extension) with
// compiler cc and flags into an object in dir and returns its path.
func Compile(t testing.TB, dir, cc, src string, flags ...string) string {
	t.Helper()
	Need(t, cc)
	base := strings.TrimSuffix(filepath.Base(src), filepath.Ext(src))
	obj := filepath.Join(dir, base+"-"+sanitize(cc+strings.Join(flags, ""))+".o")
	args := append(append([]string{}, flags...), "-c", src, "-o", obj)
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, out)
	}
	return obj
}

// CompileString writes source text to dir/name and compiles it.
func CompileString(t testing.TB, dir, cc, name, text string, flags ...string) string {
	t.Helper()
	src := filepath.Join(dir, name)
	if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return Compile(t, dir, cc, src, flags...)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

// Link links objects (and extra arguments such as libraries) into an
// executable with driver cc.
func Link(t testing.TB, cc, exe string, args ...string) {
	t.Helper()
	all := append(append([]string{}, args...), "-o", exe)
	if out, err := exec.Command(cc, all...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(all, " "), err, out)
	}
}

// Result is the outcome of running a program.
type Result struct {
	Stdout, Stderr string
	Exit           int
	TimedOut       bool
}

// Run runs a program with a time limit.
func Run(limit time.Duration, name string, args ...string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	r := Result{Stdout: o.String(), Stderr: e.String()}
	if ctx.Err() != nil {
		r.TimedOut = true
	}
	if ee, ok := err.(*exec.ExitError); ok {
		r.Exit = ee.ExitCode()
	} else if err != nil {
		r.Exit = -1
	}
	return r
}

// Extract unpacks the members of an ar archive into dir and returns their
// paths in archive order. Members with the same name are kept apart.
func Extract(t testing.TB, archive, dir string) []string {
	t.Helper()
	NeedFile(t, archive)
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	members, err := ReadArchive(data)
	if err != nil {
		t.Fatalf("%s: %v", archive, err)
	}
	var paths []string
	seen := make(map[string]int)
	for _, m := range members {
		name := m.Name
		if n := seen[name]; n > 0 {
			name = strings.TrimSuffix(name, ".o") + "~" + itoa(n) + ".o"
		}
		seen[m.Name]++
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, m.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// HasAVX2 reports whether the CPU can run -march=x86-64-v3 code.
func HasAVX2() bool {
	b, err := os.ReadFile("/proc/cpuinfo")
	return err == nil && bytes.Contains(b, []byte(" avx2")) && bytes.Contains(b, []byte(" bmi2")) && bytes.Contains(b, []byte(" fma"))
}
