package effect

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"hijack/ibr"
)

func TestScratch(t *testing.T) {
	src, _ := os.ReadFile("/tmp/eff/lines.txt")
	lines := strings.Split(strings.TrimSpace(string(src)), "\n")
	bs := assemble(t, lines)
	for i, b := range bs {
		lay, asm, err := ibr.Decode(b)
		fmt.Printf("%-40s % x\n    -> op=%v %v args=%v mb=%d ds=%d as=%d pfx=%v err=%v esc=%v\n", lines[i], b, asm.Op, asm, asm.Args, asm.MemBytes, asm.DataSize, asm.AddrSize, asm.Prefix[:3], err, lay.Escape)
	}
}
