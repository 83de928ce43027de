package spec

// Limits of SPEC §4.1. Each is refused with an error that names it.
const (
	MaxArchiveBytes   = 64 << 20  // a templates archive, in bytes
	MaxArchiveMembers = 10000     // members of a templates archive
	MaxRenderedBytes  = 16 << 20  // one rendered file, in bytes
	MaxItemBytes      = 512 << 10 // one rendered collection item, in bytes
	MaxPlaceholders   = 4096      // placeholder occurrences in one template
)
