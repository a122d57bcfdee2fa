package rewrite

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"hijack/elfobj"
)

// Every object hijack instruments gets a marker: a non-allocated SHT_NOTE
// section .note.hijack with one note, owner "hijack", type NoteTypePresets,
// whose description is the comma-separated names of the presets applied
// (NUL-terminated). Linkers concatenate it like .comment, so a linked
// program shows its instrumented objects in `readelf -n`; `ld -r` keeps a
// note per object. It takes no memory at run time.

// MarkerSection is the name of the section that marks a rewritten object.
const MarkerSection = ".note.hijack"

// NoteOwner and NoteTypePresets identify hijack's note.
const (
	NoteOwner       = "hijack"
	NoteTypePresets = 0x100
)

// ErrAlreadyRewritten is matched (errors.Is) by *AlreadyRewrittenError.
var ErrAlreadyRewritten = errors.New("already rewritten by hijack")

// AlreadyRewrittenError is the error Rewrite returns for an object hijack
// already instrumented: a second pass would instrument the inserted code
// and, with vptrace, register the object's sites twice.
type AlreadyRewrittenError struct {
	Presets []string // as the marker names them; empty if unknown
}

func (e *AlreadyRewrittenError) Error() string {
	ps := strings.Join(e.Presets, ", ")
	if ps == "" {
		ps = "unknown"
	}
	return fmt.Sprintf("already rewritten by hijack (presets: %s); rewrite the original object", ps)
}

// Is makes errors.Is(err, ErrAlreadyRewritten) true.
func (e *AlreadyRewrittenError) Is(target error) bool { return target == ErrAlreadyRewritten }

// Marker reports whether f was rewritten by hijack and with which presets:
// it has a .note.hijack section, or (objects from before the marker) the
// .vptrace section of the vptrace preset.
func Marker(f *elfobj.File) (presets []string, ok bool) {
	for _, s := range f.Sections {
		switch {
		case s.Name == MarkerSection:
			ok = true
			for _, p := range notePresets(s.Data) {
				if !slices.Contains(presets, p) {
					presets = append(presets, p)
				}
			}
		case s.Name == ".vptrace" && s.Type == elf.SHT_PROGBITS:
			ok = true
			if !slices.Contains(presets, "vptrace") {
				presets = append(presets, "vptrace")
			}
		}
	}
	return presets, ok
}

// notePresets reads the preset names from hijack's notes in b (several
// after ld -r); malformed notes name none.
func notePresets(b []byte) []string {
	var out []string
	for len(b) >= 12 {
		namesz, descsz, typ := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:])
		b = b[12:]
		nlen, dlen := align4(uint64(namesz)), align4(uint64(descsz))
		if nlen > uint64(len(b)) || dlen > uint64(len(b))-nlen {
			break
		}
		name, desc := b[:namesz], b[nlen:nlen+uint64(descsz)]
		b = b[nlen+dlen:]
		if string(bytes.TrimRight(name, "\x00")) != NoteOwner || typ != NoteTypePresets {
			continue
		}
		for _, p := range strings.Split(string(bytes.TrimRight(desc, "\x00")), ",") {
			if p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

// addMarker adds the .note.hijack section naming the presets.
func addMarker(f *elfobj.File, presets []string) {
	name := []byte(NoteOwner + "\x00")
	desc := []byte(strings.Join(presets, ",") + "\x00")
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, uint32(len(name)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(desc)))
	b = binary.LittleEndian.AppendUint32(b, NoteTypePresets)
	b = append(b, name...)
	b = append(b, make([]byte, align4(uint64(len(name)))-uint64(len(name)))...)
	b = append(b, desc...)
	b = append(b, make([]byte, align4(uint64(len(desc)))-uint64(len(desc)))...)
	f.AddSection(&elfobj.Section{Name: MarkerSection, Type: elf.SHT_NOTE, Align: 4, Data: b})
	if f.MaxSize != 0 {
		f.MaxSize += uint64(len(b)) + 64 + uint64(len(MarkerSection)) + 1
	}
}
