package archive_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"hijack/archive"
	"hijack/internal/objmut"
)

// FuzzRead: Read never panics and its errors are one line; NewFile reads
// the same members; what it reads writes (Write) and reads back as the
// same members. Seeds: archives of the compiled corpus objects
// (objmut.Corpus) with short and long names, and copies with header
// fields set to boundary values.
func FuzzRead(f *testing.F) {
	var ms []archive.Member
	for i, obj := range objmut.Corpus(f, "../testdata/src", f.TempDir()) {
		name := fmt.Sprintf("m%d.o", i)
		if i%2 == 1 {
			name = fmt.Sprintf("a-rather-long-member-name-%d.o", i)
		}
		ms = append(ms, archive.Member{Name: name, Data: obj.Data})
	}
	good, err := archive.Write(ms)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(archive.Magic))
	// Header fields: name, size, terminator of the first few members.
	for p, k := len(archive.Magic), 0; p+60 <= len(good) && k < 6; k++ {
		var size int
		fmt.Sscan(strings.TrimSpace(string(good[p+48:p+58])), &size)
		for _, patch := range []struct {
			off int
			v   string
		}{{0, "/999999         "}, {0, "//              "}, {48, "-1        "}, {48, "9999999999"}, {48, "0         "}, {58, "x\n"}} {
			d := bytes.Clone(good)
			copy(d[p+patch.off:], patch.v)
			f.Add(d)
		}
		f.Add(good[:p+60+size/2])
		p += 60 + size + size&1
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// A hang would stall the fuzzer silently: crash instead.
		tm := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("archive of %d bytes takes over 10 s", len(data))) })
		defer tm.Stop()
		ms, err := archive.Read(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if !archive.IsThin(data) {
			// The member-by-member reader finds the same members.
			a, err := archive.NewFile(bytes.NewReader(data), int64(len(data)), "")
			if err != nil || len(a.Members) != len(ms) {
				t.Fatalf("NewFile: %v, %d members; Read found %d", err, len(a.Members), len(ms))
			}
			for i := range ms {
				d, err := a.ReadMember(i)
				if err != nil || a.Members[i].Name != ms[i].Name || !bytes.Equal(d, ms[i].Data) {
					t.Fatalf("NewFile: member %d (%q) differs from Read's (%q): %v", i, a.Members[i].Name, ms[i].Name, err)
				}
			}
		}
		out, err := archive.Write(ms)
		if err != nil {
			return
		}
		back, err := archive.Read(out)
		if err != nil {
			t.Fatalf("reading what Write wrote: %v", err)
		}
		if len(back) != len(ms) {
			t.Fatalf("%d members read back, want %d", len(back), len(ms))
		}
		for i := range ms {
			if back[i].Name != ms[i].Name || !bytes.Equal(back[i].Data, ms[i].Data) {
				t.Fatalf("member %d (%q) differs after a round trip (%q)", i, ms[i].Name, back[i].Name)
			}
		}
	})
}
