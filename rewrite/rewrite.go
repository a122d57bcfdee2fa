// Package rewrite runs hijack's pipeline on one object: read it, build the
// IBR, let the presets the rules select plan their insertions, lay the code
// out again and write the object.
package rewrite

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"hijack/elfobj"
	"hijack/emit"
	"hijack/ibr"
	"hijack/preset"
	"hijack/rules"
)

// Stats tells what a rewrite did.
type Stats struct {
	Funcs, Instrumented, Skipped int // functions: in the object, given to a preset, left alone
	Insertions                   int // instructions with inserted code before them
	// Added counts the bytes the presets added: inserted code, what its
	// relocations may need, new sections and symbols. The output may be
	// this much larger than elfobj.OutputLimit of the input.
	Added uint64
}

// Rewrite rewrites the object in data, named name, according to rf.
// Warnings (functions left uninstrumented and why) go to warn. The returned
// bytes are the new object. Errors and warnings are one line each, with
// names from the object made printable (elfobj.Printable).
func Rewrite(name string, data []byte, rf *rules.File, presets preset.Set, warn func(string)) ([]byte, Stats, error) {
	return RewriteWith(name, data, rf, presets, warn, Options{})
}

// Options says what the caller knows of the object beyond its bytes.
type Options struct {
	// Executable: the object was compiled for an executable (hijack cc
	// saw none of -fPIC, -fpic, -shared), so a preset may choose a TLS
	// model a dlopen'ed library could not use (ibr.Object.Executable).
	Executable bool
}

// RewriteWith is Rewrite with what opts says of the object.
func RewriteWith(name string, data []byte, rf *rules.File, presets preset.Set, warn func(string), opts Options) ([]byte, Stats, error) {
	if warn == nil {
		warn = func(string) {}
	}
	w := warn
	out, st, err := rewrite(name, data, rf, presets, func(msg string) { w(elfobj.Printable(msg)) }, opts)
	return out, st, elfobj.PrintableError(err)
}

func rewrite(name string, data []byte, rf *rules.File, presets preset.Set, warn func(string), opts Options) ([]byte, Stats, error) {
	var st Stats
	f, err := elfobj.Read(data)
	if err != nil {
		return nil, st, err
	}
	if ps, ok := Marker(f); ok {
		return nil, st, &AlreadyRewrittenError{Presets: ps}
	}
	o, err := ibr.Build(f)
	if err != nil {
		return nil, st, err
	}
	o.Name = name
	o.Executable = opts.Executable
	before := rawSize(f)
	st.Funcs = len(o.Funcs)
	// Group the selected functions by rule, in rule order.
	byRule := make(map[*rules.Rule][]*ibr.Func)
	skipped := make(map[*ibr.Section][]string)
	for _, fn := range o.Funcs {
		r, ok := rf.Match(fn.Name)
		if !ok {
			continue
		}
		if !fn.Section.Rewritable() {
			skipped[fn.Section] = append(skipped[fn.Section], fn.Name)
			st.Skipped++
			continue
		}
		byRule[r] = append(byRule[r], fn)
		st.Instrumented++
	}
	for s, names := range skipped {
		warn(fmt.Sprintf("section %s: %d function(s) not instrumented (%s): %s", s.Elf.Name, len(names), list(names), s.Problem))
	}
	// Each preset that selects functions here begins a session with the
	// parameters of all its rules that do (for object-wide choices), then
	// applies its rules in rule order, each with its own parameters, and
	// finishes.
	paramsOf := make(map[string][]rules.Params)
	var used []string
	for i := range rf.Rules {
		r := &rf.Rules[i]
		if len(byRule[r]) == 0 {
			continue
		}
		if _, ok := paramsOf[r.Preset]; !ok {
			used = append(used, r.Preset)
		}
		paramsOf[r.Preset] = append(paramsOf[r.Preset], r.Params)
	}
	sessions := make(map[string]preset.Session, len(used))
	for _, name := range used {
		p, ok := presets.Lookup(name)
		if !ok {
			return nil, st, fmt.Errorf("preset %q is not available in this build", name)
		}
		ss, err := p.Begin(o, paramsOf[name])
		if err != nil {
			return nil, st, fmt.Errorf("preset %s: %w", name, err)
		}
		sessions[name] = ss
	}
	for i := range rf.Rules {
		r := &rf.Rules[i]
		if fns := byRule[r]; len(fns) > 0 {
			if err := sessions[r.Preset].Apply(fns, r.Params, warn); err != nil {
				return nil, st, fmt.Errorf("preset %s: %w", r.Preset, err)
			}
		}
	}
	for _, name := range used {
		if err := sessions[name].Finish(); err != nil {
			return nil, st, fmt.Errorf("preset %s: %w", name, err)
		}
	}
	for _, s := range o.Code {
		st.Insertions += s.Insertions
	}
	// What the presets added is allowed on top of the input's bound.
	st.Added = inserted(o) + rawSize(f) - min(before, rawSize(f))
	if f.MaxSize != 0 {
		f.MaxSize += st.Added
	}
	if err := emit.Emit(o, warn); err != nil {
		return nil, st, err
	}
	if len(used) > 0 {
		if f.HasLTO() {
			if err := stripLTO(f); err != nil {
				return nil, st, err
			}
			warn("fat LTO object: LTO IR removed, so that the link uses the instrumented code")
		}
		addMarker(f, used)
	}
	out, err := f.Write()
	if err != nil {
		return nil, st, err
	}
	return out, st, nil
}

// rawSize counts the bytes the sections, relocations and symbols of f
// take, however they are laid out.
func rawSize(f *elfobj.File) uint64 {
	n := uint64(len(f.Symbols)) * 24
	for _, s := range f.Sections {
		n += 64 + uint64(len(s.Data)) + uint64(len(s.Relocs))*24
	}
	return n
}

// inserted counts the bytes of the code the presets inserted and of what
// its relocations may add (an entry, a symbol and its name each).
func inserted(o *ibr.Object) uint64 {
	var n uint64
	for _, s := range o.Code {
		for i := range s.Insts {
			for _, sn := range s.Insts[i].Inserted() {
				n += uint64(len(sn.Code)) + uint64(len(sn.Relocs))*(24+24+32)
				if sn.Cold != nil {
					n += 5 + uint64(len(sn.Cold.Code)) + uint64(len(sn.Cold.Relocs))*(24+24+32)
				}
			}
		}
	}
	return n
}

// list names a few functions for a message.
func list(names []string) string {
	sort.Strings(names)
	if len(names) > 4 {
		return strings.Join(names[:4], ", ") + fmt.Sprintf(" and %d more", len(names)-4)
	}
	return strings.Join(names, ", ")
}

// stripLTO removes the LTO IR of a fat LTO object (gcc -ffat-lto-objects:
// machine code and GIMPLE; clang -ffat-lto-objects: .llvm.lto). A link with
// -flto would compile the IR again and throw the rewritten code away;
// without it, the linker plugin does not claim the object and links the
// code hijack rewrote.
func stripLTO(f *elfobj.File) error {
	err := f.RemoveSections(func(s *elfobj.Section) bool { return elfobj.IsLTOSection(s.Name) },
		func(sym *elfobj.Symbol) bool { return elfobj.IsLTOMarker(sym.Name) })
	if err != nil {
		return fmt.Errorf("fat LTO object: the LTO IR cannot be removed (%v): compile with -fno-lto", err)
	}
	return nil
}

// IsNotRelocatable reports whether err says the input was an executable or
// a shared object.
func IsNotRelocatable(err error) bool { return errors.Is(err, elfobj.ErrNotRelocatable) }
