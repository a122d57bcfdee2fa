// Package elfobj reads and writes ELF64 little-endian x86-64 relocatable
// objects (ET_REL) faithfully.
//
// Unlike debug/elf, which is read-only, a File here can be modified and
// written back: section contents, relocations (SHT_RELA, parsed into Rela
// values) and the symbol table (parsed into Symbol values) are held in a form
// that the rewriter edits, and Write lays out a new object from them. Every
// section the package does not interpret is carried through byte for byte,
// so an object that is read and written without changes keeps every
// section's contents, every relocation and every symbol exactly.
//
// Read validates the input thoroughly (header, offsets, sizes, links,
// indices, string and symbol tables, relocation targets) and reports the
// first problem as an error naming the section and offset; it never panics
// on malformed input.
package elfobj
