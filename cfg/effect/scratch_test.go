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
		lay, asm, _ := ibr.Decode(b)
		e := Of(&asm, &lay, b)
		fmt.Printf("{%q, %q},\n", lines[i], e.String())
	}
}
