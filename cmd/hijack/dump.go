package main

import (
	"bufio"
	"fmt"
	"io"
	"path"

	"github.com/spf13/pflag"
	"golang.org/x/arch/x86/x86asm"

	"hijack/elfobj"
	"hijack/ibr"
)

const dumpUsage = `Usage: hijack dump [--func GLOB] [--member GLOB] IN.o|IN.a

Shows what hijack understood of an object, like objdump -dr: every code
section split into functions, padding and data, each instruction with its
bytes, its relocations (field offset, type, symbol+addend) and the links
hijack made for branches and RIP-relative operands the assembler resolved
(-> target). Sections hijack will not rewrite are marked with the reason.
For an archive (regular or thin), every member in turn, each under a line
"IN.a(MEMBER):"; --member GLOB picks members by name.
`

func cmdDump(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("dump", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	glob := fs.String("func", "*", "only functions matching GLOB")
	member := fs.String("member", "*", "only archive members matching GLOB")
	help := fs.BoolP("help", "h", false, "help")
	if err := fs.Parse(fixSingleDash(args)); err != nil {
		return usageError(stderr, "dump", "%v", err)
	}
	if *help {
		fmt.Fprint(stdout, dumpUsage)
		return exitOK
	}
	if fs.NArg() != 1 {
		return usageError(stderr, "dump", "want one IN.o or IN.a, got %d argument(s)", fs.NArg())
	}
	for _, g := range []string{*glob, *member} {
		if _, err := path.Match(g, ""); err != nil {
			return usageError(stderr, "dump", "bad pattern %q: %v", g, err)
		}
	}
	objs, inArchive, err := readObjects(fs.Arg(0), *member)
	if err != nil {
		fmt.Fprintf(stderr, "hijack: %s\n", oneLine(err.Error()))
		return exitFailure
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	status := exitOK
	for _, in := range objs {
		if inArchive {
			fmt.Fprintf(w, "%s:\n", in.name)
		}
		o, err := buildIBR(in.data)
		if err != nil {
			w.Flush()
			fmt.Fprintf(stderr, "hijack: %s: %s\n", in.name, oneLine(err.Error()))
			status = exitFailure
			continue
		}
		dump(w, o, *glob)
		if inArchive {
			fmt.Fprintln(w)
		}
	}
	return status
}

// buildIBR reads an object and builds its IBR.
func buildIBR(data []byte) (*ibr.Object, error) {
	f, err := elfobj.Read(data)
	if err != nil {
		return nil, err
	}
	return ibr.Build(f)
}

func dump(w io.Writer, o *ibr.Object, glob string) {
	f := o.File
	for _, s := range o.Code {
		fmt.Fprintf(w, "section %s (%d bytes, %d items, %d functions)", s.Elf.Name, len(s.Elf.Data), len(s.Insts), len(s.Funcs))
		if !s.Rewritable() {
			fmt.Fprintf(w, " NOT REWRITABLE: %s", s.Problem)
		}
		fmt.Fprintln(w)
		for i := range s.Insts {
			in := &s.Insts[i]
			fn := s.FuncAt(i)
			if fn != nil {
				if ok, _ := path.Match(glob, fn.Name); !ok {
					continue
				}
				if fn.Start == i {
					fmt.Fprintf(w, "\n%016x <%s>:\n", in.Off, fn.Name)
				}
			} else if glob != "*" {
				continue
			}
			switch in.Kind {
			case ibr.Pad:
				fmt.Fprintf(w, "%8x:\t(padding, %d bytes)\n", in.Off, in.Len)
				continue
			case ibr.Data:
				fmt.Fprintf(w, "%8x:\t(data, %d bytes)\n", in.Off, in.Len)
				continue
			}
			text := "(unknown to x86asm)"
			if asm := s.Asm(i); asm.Op != 0 {
				text = x86asm.GNUSyntax(*asm, uint64(in.Off), nil)
			}
			fmt.Fprintf(w, "%8x:\t%-30s\t%s", in.Off, fmt.Sprintf("% x", s.Bytes(i)), text)
			if l := in.Link; l != nil {
				kind := "branch"
				if l.Kind == ibr.LinkRIP {
					kind = "rip"
				}
				if l.Target == len(s.Insts) {
					fmt.Fprintf(w, "\t%s -> end of section", kind)
				} else {
					fmt.Fprintf(w, "\t%s -> %s", kind, s.Where(uint64(int64(s.Insts[l.Target].Off)+l.Delta)))
				}
			}
			fmt.Fprintln(w)
			for _, fr := range in.Relocs {
				r := f.Sections[fr.Sec].Relocs[fr.Index]
				fmt.Fprintf(w, "%8x:\t\t%s\t%s%+#x\t(field +%d, %d bytes)\n", uint64(in.Off)+uint64(fr.Off), r.Type, symName(f, r.Sym), r.Addend, fr.Off, fr.Size)
			}
		}
		fmt.Fprintln(w)
	}
	refs := 0
	for _, r := range o.Refs {
		if r.Table {
			refs++
		}
	}
	fmt.Fprintf(w, "%d references into code from relocations (%d jump-table entries)\n", len(o.Refs), refs)
}

func symName(f *elfobj.File, k uint32) string {
	sym := &f.Symbols[k]
	if sym.Name == "" && int(sym.Shndx) < len(f.Sections) {
		return f.Sections[sym.Shndx].Name
	}
	return sym.Name
}
