package kit

import (
	"debug/elf"
	"fmt"

	"hijack/elfobj"
	"hijack/rules"
	"hijack/snippet"
)

// TLSModel is how inserted code reaches per-thread data of its object.
type TLSModel uint8

const (
	// LocalExec: the data is in the executable's static TLS block, at an
	// offset from the thread pointer the linker fixes
	// (R_X86_64_TPOFF32). Executables only.
	LocalExec TLSModel = iota
	// InitialExec: the data is in the static TLS block, at an offset the
	// loader puts into a GOT entry (R_X86_64_GOTTPOFF): executables, and
	// libraries loaded at start-up. A dlopen'ed library gets static TLS
	// only from glibc's small surplus (1664 bytes by default).
	InitialExec
	// Indirect: one initial-exec TLS word (8 bytes, however many slots)
	// holds the address of this thread's slot array, which the runtime
	// maps on the thread's first use: any executable or library,
	// dlopen'ed ones too.
	Indirect
)

var tlsModels = [...]string{"local-exec", "initial-exec", "indirect"}

// String returns the model's name: local-exec, initial-exec or indirect.
func (m TLSModel) String() string {
	if int(m) < len(tlsModels) {
		return tlsModels[m]
	}
	return fmt.Sprintf("TLSModel(%d)", uint8(m))
}

// ParseTLSModel returns the model String names.
func ParseTLSModel(s string) (TLSModel, error) {
	for m, name := range tlsModels {
		if s == name {
			return TLSModel(m), nil
		}
	}
	return 0, fmt.Errorf("unknown TLS model %q (local-exec, initial-exec or indirect)", s)
}

// ObjectTLS returns the TLS model the rules of one preset that select
// functions of an object ask for (params, in rule order), "" when all
// leave it at auto. One object has one model: rules at auto take what an
// explicit one asks for, and two rules that ask for different models are
// an error naming both; hint ends its message.
func ObjectTLS(params []rules.Params, hint string) (string, error) {
	model, from := "", ""
	for _, ps := range params {
		m := ps.String("tls")
		if m == "auto" {
			continue
		}
		if model != "" && m != model {
			return "", fmt.Errorf("%s asks for tls: %s and %s for tls: %s, but one object has one TLS model: give both rules the same tls%s",
				from, model, ps.Origin(), m, hint)
		}
		model, from = m, ps.Origin()
	}
	return model, nil
}

// Slots is an array of 8-byte per-thread slots of an object, which its
// inserted code reads and writes (a last value per site, say).
type Slots struct {
	Model TLSModel
	// Sym names the object's TLS symbol: the slot array (LocalExec,
	// InitialExec), or the word that holds the address of this thread's
	// array (Indirect). Its size is Size.
	Sym string
	// Setup names, for Indirect, the function inserted code calls while
	// the word is 0, on its thread's first write: it must make the word
	// point to a zeroed array for the thread, and keep every register and
	// the flags. It is called directly (R_X86_64_PLT32): a local
	// function of the object.
	Setup string
}

// Size returns the size of the TLS storage Sym names for n slots (at least
// one slot: an empty TLS symbol is still an address).
func (s Slots) Size(n int) uint64 {
	if s.Model == Indirect {
		return 8 // the word; the runtime maps the slots
	}
	return uint64(8 * max(n, 1))
}

// At returns the memory operand of slot k, first loading into u (a scratch
// register; none for LocalExec) what the model needs: for InitialExec the
// slots' offset from the thread pointer (from the GOT), for Indirect this
// thread's slot array. An Indirect write (write true) first has the
// array mapped if the thread has none yet: it tests the word, which
// changes the flags, and calls Setup, stepping over the red zone unless
// the code already did (stepped). An Indirect read must follow a write
// of the same slot by the same thread, which mapped the array.
func (s Slots) At(b *Builder, k int, u snippet.Reg, write, stepped bool) snippet.Operand {
	switch s.Model {
	case InitialExec:
		b.MovQ(snippet.GOTTPOFF(s.Sym), u)
		return snippet.Mem(u, int32(8*k)).Seg(snippet.FS)
	case Indirect:
		if write {
			s.array(b, u, stepped)
		} else {
			b.MovQ(snippet.GOTTPOFF(s.Sym), u)
			b.MovQ(snippet.Mem(u, 0).Seg(snippet.FS), u)
		}
		return snippet.Mem(u, int32(8*k))
	}
	return snippet.TPOFF(s.Sym, int64(8*k))
}

// array loads into u this thread's slot array from the TLS word; while
// the word is 0 it calls Setup and loads again:
//
//	1: mov sym@gottpoff(%rip),u; mov %fs:(u),u; test u,u; jz 3f
//	2: ...
//	3: lea -128(%rsp),%rsp; call setup; lea 128(%rsp),%rsp; jmp 1b
//
// The call, which a thread makes once, goes into the snippet's cold part
// (inline where the code is cold already).
func (s Slots) array(b *Builder, u snippet.Reg, stepped bool) {
	load, setup := b.label("slots"), b.label("slotsetup")
	b.Label(load)
	b.MovQ(snippet.GOTTPOFF(s.Sym), u)
	b.MovQ(snippet.Mem(u, 0).Seg(snippet.FS), u)
	b.TestQ(u, u)
	cold := b.IsCold()
	var ok string
	if cold {
		ok = b.label("slotsok")
		b.Jcc(snippet.CondNE, ok)
	} else {
		b.Jcc(snippet.CondE, setup)
		b.Cold()
		defer b.Hot()
	}
	b.Label(setup)
	if !stepped {
		b.LeaQ(snippet.Mem(snippet.RSP, -RedZone), snippet.RSP)
	}
	b.CallSym(s.Setup)
	if !stepped {
		b.LeaQ(snippet.Mem(snippet.RSP, RedZone), snippet.RSP)
	}
	b.Jmp(load)
	if cold {
		b.Label(ok)
	}
}

// MayBeShared reports whether the object f may end up in a shared
// library, which LocalExec cannot link into: unless f shows that it was
// compiled for an executable only, it may. Evidence for an executable:
// absolute 32-bit addresses (non-PIC code), local-exec TLS, or
// PC-relative references from code to global data of default visibility,
// which a shared library could not bind locally (gcc -fPIE). Objects with
// none of them (functions that only use their arguments) may go anywhere.
// Call it before adding code: it reads the code's relocations.
func MayBeShared(f *elfobj.File) bool {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA || int(s.Info) >= len(f.Sections) || f.Sections[s.Info].Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		for _, r := range s.Relocs {
			sym := &f.Symbols[r.Sym]
			switch r.Type {
			case elf.R_X86_64_TLSGD, elf.R_X86_64_TLSLD, elf.R_X86_64_DTPOFF32:
				return true
			case elf.R_X86_64_32, elf.R_X86_64_32S, elf.R_X86_64_TPOFF32:
				return false
			case elf.R_X86_64_PC32:
				if sym.Bind() != elf.STB_LOCAL && elf.ST_VISIBILITY(sym.Other) == elf.STV_DEFAULT && sym.Type() != elf.STT_FUNC && sym.Type() != elf.STT_SECTION {
					if sym.Shndx == elfobj.ShnUndef || sym.Type() == elf.STT_OBJECT || sym.Type() == elf.STT_NOTYPE {
						return false
					}
				}
			}
		}
	}
	return true
}
