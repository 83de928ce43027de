package daemon

import (
	"fmt"
	"os"
)

func writeFile(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
