// Package all lists the presets built into hijack. Adding a preset to
// hijack is one line here (and its package): the rules parser, `hijack
// help presets`, the rules reference, the README table and `hijack cc`'s
// runtime linking all take it from this list.
package all

import (
	"hijack/preset"
	"hijack/preset/blockcount"
	"hijack/preset/clobber"
	"hijack/preset/pad"
	"hijack/preset/vptrace"
)

// Presets returns the presets of this build, in documentation order.
func Presets() preset.Set {
	return preset.Set{vptrace.Preset{}, blockcount.Preset{}, pad.Preset{}, clobber.Preset{}}
}
