package emit

import (
	"fmt"
	"strings"

	"hijack/elfobj"
)

// rewriteDebugInfo makes DWARF debug information follow moved code. For
// now it only warns: relocated addresses (DW_AT_low_pc, DW_LNE_set_address)
// follow through the relocation remapping, but lengths and advances do not.
func rewriteDebugInfo(f *elfobj.File, maps map[int]*codeMap, warn func(string)) (map[int]*rebuiltSection, error) {
	var dbg []string
	for _, s := range f.Sections {
		if s.Name == ".debug_line" || s.Name == ".debug_info" || s.Name == ".debug_rnglists" || s.Name == ".debug_loclists" {
			dbg = append(dbg, s.Name)
		}
	}
	if len(dbg) > 0 && warn != nil {
		warn(fmt.Sprintf("debug information (%s) is not rewritten yet: addresses of functions are right, but line numbers and ranges inside rewritten functions are approximate", strings.Join(dbg, ", ")))
	}
	return nil, nil
}
